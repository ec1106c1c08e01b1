"""routing.mode gateway and alb on the real control plane (mode service is every scenario's default,
installed by test_scenarios). gateway: the first committed Deployment scenario installed
with an InferencePool, an HTTPRoute and the Endpoint Picker. The API server stores every object
(the pinned InferencePool and HTTPRoute CRDs), the picker pod is scheduled on a general-purpose
node (it tolerates no GPU taint) and becomes Ready, and the InferencePool's selector, evaluated by
the API server, matches exactly the model-server pods (not the picker, not the helm test pod) and
its target port is the servers' container port. alb: the Ingress is stored and its backend Service
selects exactly the model-server pods on their port. No Gateway implementation and no AWS Load
Balancer Controller run here, so no traffic goes through either."""

from __future__ import annotations

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import WAIT, cleanup, ready_pods
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.nodes import DEFAULT_ZONE, NodeShape
from tests.cluster.shapes import (
    RELEASES,
    daemonset_requests,
    deployment_scenario,
    nodes_for,
    pod_groups,
    render_scenario_chart,
    scenario_shapes,
    shape_for,
)
from vllm_eks.core import contract

pytestmark = pytest.mark.cluster

HELM = "helm4"
POOL_API = ("inference.networking.k8s.io", "v1")
GATEWAY = ["--set", "routing.mode=gateway",
           "--set-json", 'routing.gateway.parentRefs=[{"name":"inference-gateway","namespace":"gateway-system"}]']
ALB = ["--set", "routing.mode=alb",
       "--set", "routing.alb.certificateArn=arn:aws:acm:us-east-1:111122223333:certificate/0a1b2c3d-0000-4000-8000-000000000000",
       "--set-json", 'networkPolicy.albSourceCidrs=["10.0.0.0/16"]']


def system_node_shape() -> NodeShape:
    """An untainted on-demand node without GPUs (m6i.large after the kubelet's reserve), where
    the picker runs."""
    res = {"cpu": "1930m", "memory": "6Gi", "pods": "29", "ephemeral-storage": "40Gi"}
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", contract.ZONE_LABEL: DEFAULT_ZONE,
              contract.CAPACITY_TYPE_LABEL: "on-demand", contract.INSTANCE_TYPE_LABEL: "m6i.large"}
    return NodeShape("system", "m6i.large", labels, [], res, dict(res), "general-purpose node for the picker")


def selector_string(match_labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


def servers_on_gpu_nodes(suffix: str, gpu_nodes):
    """The first Deployment scenario in its own namespace (<namespace>-<suffix>), with the kwok GPU
    nodes its model-server pods fill: (scenario, namespace, server pod group, server selector)."""
    scenario = deployment_scenario()
    if scenario is None:
        pytest.fail("no committed scenario runs a Deployment (run `make values`)")
    ns = f"{scenario.namespace}-{suffix}"[:63].rstrip("-")
    rendered = render_scenario_chart(scenario, "vllm-inference", ns)
    (server,) = [g for g in pod_groups(rendered) if g.kind == "Deployment"]
    (deployment,) = [o for o in rendered if o["kind"] == "Deployment" and o["metadata"]["name"] == server.name]
    overhead = daemonset_requests(render_scenario_chart(scenario, "gpu-infra", ns)) if scenario.values("gpu-infra") else {}
    shape = shape_for(server, scenario_shapes(scenario))
    gpu_nodes(shape, nodes_for(server, shape, overhead))
    return scenario, ns, server, selector_string(deployment["spec"]["selector"]["matchLabels"])


def test_gateway_mode_picker_scheduled_and_pool_selects_the_servers(cluster: Cluster, gpu_nodes) -> None:
    scenario, ns, server, server_selector = servers_on_gpu_nodes("gw", gpu_nodes)
    release = RELEASES["vllm-inference"]
    chart = scenarios.chart_package("vllm-inference")
    values = str(scenario.values("vllm-inference"))
    (system_node,) = gpu_nodes(system_node_shape(), 1)

    cluster.ensure_namespace(ns)
    try:
        cluster.helm(HELM, ["install", release, chart, "--namespace", ns, "--values", values,
                            "--wait", "--timeout", WAIT, *GATEWAY])
        manifest = cluster.helm_manifest(HELM, release, ns)
        missing = [f"{o['kind']}/{o['metadata']['name']}" for o in manifest if not cluster.exists(o, ns)]
        assert not missing, f"objects Helm recorded but the API server does not have: {missing}"
        (pool_obj,) = [o for o in manifest if o["kind"] == "InferencePool"]
        (picker,) = [o for o in manifest if o["kind"] == "Deployment"
                     and o["metadata"]["labels"]["app.kubernetes.io/component"] == "endpoint-picker"]
        assert [o["kind"] for o in manifest if o["kind"] == "HTTPRoute"] == ["HTTPRoute"]

        # The picker: scheduled on the untainted node, Ready.
        picker_selector = selector_string(picker["spec"]["selector"]["matchLabels"])
        (picker_pod,) = wait_for("a Ready picker pod",
                                 lambda: ready_pods(cluster, ns, picker_selector) or None, timeout=60)
        assert picker_pod.spec.node_name == system_node

        # The InferencePool as stored, its selector evaluated by the API server.
        stored = cluster.custom.get_namespaced_custom_object(*POOL_API, ns, "inferencepools",
                                                             pool_obj["metadata"]["name"])
        selected = cluster.pods(ns, selector_string(stored["spec"]["selector"]["matchLabels"]))
        servers = wait_for(f"{server.pods} Ready model-server pods",
                           lambda: (lambda ps: ps if len(ps) == server.pods else None)(
                               ready_pods(cluster, ns, server_selector)), timeout=60)
        assert sorted(p.metadata.name for p in selected) == sorted(p.metadata.name for p in servers)
        assert picker_pod.metadata.name not in {p.metadata.name for p in selected}
        assert stored["spec"]["targetPorts"] == [{"number": p} for p in server_ports(servers)]
        assert stored["spec"]["endpointPickerRef"]["name"] == picker["metadata"]["name"]
        cluster.stats.objects_accepted += len(manifest)
        cluster.stats.pods_scheduled += len(servers) + 1
    finally:
        cleanup(cluster, HELM, ns)


def server_ports(pods) -> list[int]:
    """The container port named http of the model-server pods (one number for all of them)."""
    ports = {port.container_port for pod in pods for c in pod.spec.containers for port in c.ports or []
             if port.name == "http"}
    assert len(ports) == 1, f"model-server pods expose http on {sorted(ports)}"
    return sorted(ports)


def test_alb_mode_ingress_stored_and_backend_selects_the_servers(cluster: Cluster, gpu_nodes) -> None:
    scenario, ns, server, server_selector = servers_on_gpu_nodes("alb", gpu_nodes)
    release = RELEASES["vllm-inference"]

    cluster.ensure_namespace(ns)
    try:
        cluster.helm(HELM, ["install", release, scenarios.chart_package("vllm-inference"), "--namespace", ns,
                            "--values", str(scenario.values("vllm-inference")), "--wait", "--timeout", WAIT, *ALB])
        manifest = cluster.helm_manifest(HELM, release, ns)
        missing = [f"{o['kind']}/{o['metadata']['name']}" for o in manifest if not cluster.exists(o, ns)]
        assert not missing, f"objects Helm recorded but the API server does not have: {missing}"
        (ingress,) = [o for o in manifest if o["kind"] == "Ingress"]
        stored = cluster.get("networking.k8s.io/v1", "Ingress", ingress["metadata"]["name"], ns).to_dict()
        backends = [path["backend"]["service"] for rule in stored["spec"]["rules"]
                    for path in rule["http"]["paths"]]
        assert backends, stored["spec"]
        servers = wait_for(f"{server.pods} Ready model-server pods",
                           lambda: (lambda ps: ps if len(ps) == server.pods else None)(
                               ready_pods(cluster, ns, server_selector)),
                           timeout=60)
        for backend in backends:
            found = cluster.get("v1", "Service", backend["name"], ns)
            assert found is not None, f"the Ingress backend Service {backend['name']} does not exist"
            service = found.to_dict()
            selected = cluster.pods(ns, selector_string(service["spec"]["selector"]))
            assert sorted(p.metadata.name for p in selected) == sorted(p.metadata.name for p in servers)
            (port,) = [p for p in service["spec"]["ports"]
                       if p["port"] == backend["port"].get("number") or p.get("name") == backend["port"].get("name")]
            assert port["targetPort"] in ("http", *server_ports(servers)), port
        cluster.stats.objects_accepted += len(manifest)
        cluster.stats.pods_scheduled += len(servers)
    finally:
        cleanup(cluster, HELM, ns)

"""The model server's NetworkPolicy on the real control plane: the first committed Deployment
scenario installed with routing.mode alb and an ALB source CIDR. The API server stores the policy
(its own validation of the ipBlock and selectors); the policy as stored, evaluated against the
live model-server pods as the API server returns them (labels and container ports after
defaulting, tests/harness/pods.py `ingress_admits`), admits the ALB's CIDR and the Prometheus
namespace to the serving port and refuses an address outside the CIDR and an unlisted namespace.
No CNI runs here, so no packet is dropped: what a CNI enforces is beyond this tier."""

from __future__ import annotations

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import WAIT, cleanup, ready_pods
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.shapes import RELEASES
from tests.cluster.test_routing import ALB, HELM, server_ports, servers_on_gpu_nodes
from tests.harness.pods import CreatedPod, ingress_admits

pytestmark = pytest.mark.cluster

PROMETHEUS = {"app.kubernetes.io/name": "prometheus"}


def test_stored_policy_admits_the_alb_cidr_and_prometheus_to_the_live_servers(cluster: Cluster, gpu_nodes) -> None:
    scenario, ns, server, server_selector = servers_on_gpu_nodes("np", gpu_nodes)
    release = RELEASES["vllm-inference"]
    cluster.ensure_namespace(ns)
    try:
        cluster.helm(HELM, ["install", release, scenarios.chart_package("vllm-inference"), "--namespace", ns,
                            "--values", str(scenario.values("vllm-inference")), "--wait", "--timeout", WAIT,
                            *ALB, "--set-json", 'networkPolicy.allowedNamespaces=["monitoring"]'])
        manifest = cluster.helm_manifest(HELM, release, ns)
        names = [o["metadata"]["name"] for o in manifest if o["kind"] == "NetworkPolicy"
                 and o["metadata"]["labels"].get("app.kubernetes.io/component") != "endpoint-picker"]
        assert names, "the scenario installs the model server's NetworkPolicy"
        stored = [cluster.get("networking.k8s.io/v1", "NetworkPolicy", n, ns).to_dict() for n in names]
        for policy in stored:
            policy["metadata"].setdefault("namespace", ns)
        servers = wait_for(f"{server.pods} Ready model-server pods",
                           lambda: (lambda ps: ps if len(ps) == server.pods else None)(
                               ready_pods(cluster, ns, server_selector)), timeout=60)
        (port,) = server_ports(servers)
        serialize = cluster.core.api_client.sanitize_for_serialization
        for pod in servers:
            live = CreatedPod(f"Pod/{pod.metadata.name}", ns, dict(pod.metadata.labels or {}),
                              serialize(pod.spec))
            assert ingress_admits(stored, live, port, "", {}, source_ip="10.0.12.34"), live.what
            assert not ingress_admits(stored, live, port, "", {}, source_ip="192.168.0.1"), live.what
            assert ingress_admits(stored, live, port, "monitoring", PROMETHEUS), live.what
            assert not ingress_admits(stored, live, port, "elsewhere", PROMETHEUS), live.what
        cluster.stats.objects_accepted += len(manifest)
        cluster.stats.pods_scheduled += len(servers)
    finally:
        cleanup(cluster, HELM, ns)

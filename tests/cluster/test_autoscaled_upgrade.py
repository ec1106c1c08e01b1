"""`helm upgrade` must not fight the autoscaler over the replica count. With
replicasManagedExternally (the generator's setting where the observability chart renders a KEDA
ScaledObject) the chart leaves `replicas` out and the upgrade goes through, keeping the
scale-out. Without it, Helm 4's server-side apply refuses the upgrade: the scale subresource's
manager owns .spec.replicas and the chart asks for a different value."""

from __future__ import annotations

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import cleanup
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.shapes import (
    RELEASES,
    daemonset_requests,
    deployment_scenario,
    pod_groups,
    pods_per_node,
    render_scenario_chart,
    scenario_shapes,
    shape_for,
)
from tests.harness.helm import HelmError

pytestmark = pytest.mark.cluster

HELM = "helm4"


@pytest.mark.parametrize("managed", [True, False], ids=["managed-externally", "chart-owned"])
def test_upgrade_and_autoscaled_replicas(cluster: Cluster, gpu_nodes, managed: bool) -> None:
    scenario = deployment_scenario()
    assert scenario, "no committed scenario renders a vllm-inference Deployment"
    ns = f"{scenario.namespace}-scale-{'ext' if managed else 'own'}"
    chart = scenarios.chart_package("vllm-inference")
    release = RELEASES["vllm-inference"]
    group = next(g for g in pod_groups(render_scenario_chart(scenario, "vllm-inference", ns)) if g.kind == "Deployment")
    shape = shape_for(group, scenario_shapes(scenario))
    per = pods_per_node(shape, group.requests, daemonset_requests(render_scenario_chart(scenario, "gpu-infra", ns)))
    gpu_nodes(shape, -(-2 // per))  # room for two pods
    cluster.ensure_namespace(ns)
    base = ["--namespace", ns, "--values", str(scenario.values("vllm-inference")), "--set-json", "replicas=1",
            "--set-json", f"replicasManagedExternally={str(managed).lower()}"]
    try:
        cluster.helm(HELM, ["install", release, chart, *base, "--wait", "--timeout", "180s"])
        # what KEDA's HPA does on a growing queue: scale the Deployment through its scale subresource
        cluster.apps.patch_namespaced_deployment_scale(group.name, ns, {"spec": {"replicas": 2}})
        wait_for("two replicas", lambda: cluster.apps.read_namespaced_deployment(group.name, ns).spec.replicas == 2,
                 timeout=60)
        upgrade = ["upgrade", release, chart, *base, "--set-json", 'engine.extraArgs=["--disable-log-stats"]',
                   "--timeout", "180s"]
        cluster.stats.upgrades += 1
        if managed:
            cluster.helm(HELM, upgrade)
        else:
            with pytest.raises(HelmError, match=r"conflict.*\.spec\.replicas"):
                cluster.helm(HELM, upgrade)
        after = cluster.apps.read_namespaced_deployment(group.name, ns).spec.replicas
        assert after == 2, f"replicas after upgrade: {after}"
    finally:
        cleanup(cluster, HELM, ns)

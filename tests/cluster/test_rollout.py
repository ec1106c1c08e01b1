"""The rollout deadlock users hit on GPU pools, shown on a full pool (no spare GPU node):
the chart's default strategy rolls a changed engine argument out, the surge strategy
(RollingUpdate maxSurge 1, maxUnavailable 0) leaves the surge pod Pending and the upgrade times
out; `helm rollback` recovers."""

from __future__ import annotations

import json

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import cleanup, engine_args, ready_pods
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
SURGE = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def test_default_strategy_rolls_out_without_spare_node_and_surge_deadlocks(cluster: Cluster, gpu_nodes) -> None:
    scenario = deployment_scenario()
    assert scenario, "no committed scenario renders a vllm-inference Deployment"
    ns = scenario.namespace + "-rollout"
    chart = scenarios.chart_package("vllm-inference")
    values = str(scenario.values("vllm-inference"))
    release = RELEASES["vllm-inference"]
    selector = f"app.kubernetes.io/instance={release}"

    # A full pool: as many replicas as the nodes hold, so no pod can be added anywhere.
    group = next(g for g in pod_groups(render_scenario_chart(scenario, "vllm-inference", ns)) if g.kind == "Deployment")
    shape = shape_for(group, scenario_shapes(scenario))
    per = pods_per_node(shape, group.requests, daemonset_requests(render_scenario_chart(scenario, "gpu-infra", ns)))
    assert per >= 1, f"one {shape.instance} node cannot hold a model-server pod ({group.requests})"
    nodes = 2 if per == 1 else 1
    replicas = nodes * per
    gpu_nodes(shape, nodes)
    cluster.ensure_namespace(ns)
    # the chart owns the count here (the scenario leaves it to KEDA, which this test does not run)
    base = ["--namespace", ns, "--values", values, "--set-json", f"replicas={replicas}",
            "--set-json", "replicasManagedExternally=false"]
    try:
        cluster.helm(HELM, ["install", release, chart, *base, "--wait", "--timeout", "180s"])
        dep = cluster.apps.read_namespaced_deployment(group.name, ns)
        strategy = dep.spec.strategy
        assert strategy.type == "Recreate" or str(strategy.rolling_update.max_surge) in ("0", "0%"), (
            f"the chart's default strategy surges ({strategy}); on a full GPU pool it deadlocks")
        assert len(ready_pods(cluster, ns, selector)) == replicas

        # Default strategy: the changed argument reaches every pod on the same nodes.
        cluster.helm(HELM, ["upgrade", release, chart, *base, "--set-json", 'engine.extraArgs=["--disable-log-stats"]',
                            "--wait", "--timeout", "180s"])
        cluster.stats.upgrades += 1
        wait_for("all pods Ready with the new argument",
                 lambda: (lambda ps: len(ps) == replicas and all("--disable-log-stats" in engine_args(p) for p in ps))(
                     ready_pods(cluster, ns, selector)), timeout=120)

        # Surge strategy: the new pod needs a GPU node that does not exist.
        with pytest.raises(HelmError) as err:
            cluster.helm(HELM, ["upgrade", release, chart, *base, "--set-json", f"strategy={json.dumps(SURGE)}",
                                "--set-json", 'engine.extraArgs=["--disable-log-stats","--disable-log-requests"]',
                                "--wait", "--timeout", "40s"])
        cluster.stats.upgrades += 1
        pending = [p for p in cluster.pods(ns, selector) if p.status.phase == "Pending"]
        assert len(pending) == 1, f"expected one Pending surge pod, got {[p.metadata.name for p in pending]}"
        reason = cluster.scheduler_reason(pending[0])
        assert "Unschedulable" in reason and "Insufficient" in reason, reason
        old = ready_pods(cluster, ns, selector)
        assert len(old) == replicas and all("--disable-log-requests" not in engine_args(p) for p in old), (
            "the old pods should all still serve: maxUnavailable 0 never removes one before the surge pod is Ready")
        print(f"surge upgrade timed out as expected: {str(err.value).splitlines()[-1]}\n"
              f"Pending pod {pending[0].metadata.name}: {reason}")

        # Rollback to the last good revision removes the Pending pod.
        cluster.helm(HELM, ["rollback", release, "2", "--namespace", ns, "--wait", "--timeout", "120s"])
        cluster.stats.rollbacks += 1
        wait_for("the Pending surge pod to go away",
                 lambda: not [p for p in cluster.pods(ns, selector) if p.status.phase == "Pending"], timeout=120)
        assert len(ready_pods(cluster, ns, selector)) == replicas
        cluster.stats.pods_scheduled += replicas
    finally:
        cleanup(cluster, HELM, ns)

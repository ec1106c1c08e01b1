"""Pods that cannot fit stay Pending, and the scheduler says why: nodes of the pool with a GPU
missing (as after a GPU fault), with less memory than the pod asks for, and nodes without the
pool label."""

from __future__ import annotations

import time

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import cleanup
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.nodes import NodeShape
from tests.cluster.shapes import (
    RELEASES,
    deployment_scenario,
    pod_groups,
    render_scenario_chart,
    scenario_shapes,
    shape_for,
)
from tests.harness import chart_contract
from vllm_eks.core import contract

pytestmark = pytest.mark.cluster

HELM = "helm4"


def _gpu_short(shape: NodeShape, req: dict[str, int]) -> NodeShape:
    return shape.with_allocatable({contract.GPU_RESOURCE: str(req[contract.GPU_RESOURCE] - 1)})


def _memory_short(shape: NodeShape, req: dict[str, int]) -> NodeShape:
    return shape.with_allocatable({"memory": str(req["memory"] // 2)})


def _no_pool_label(shape: NodeShape, req: dict[str, int]) -> NodeShape:  # noqa: ARG001
    s = shape.with_allocatable({})
    s.labels.pop(chart_contract.rendered().pool_label, None)
    return s


CASES = {
    "gpu-missing": (_gpu_short, f"Insufficient {contract.GPU_RESOURCE}"),
    "memory-short": (_memory_short, "Insufficient memory"),
    "pool-label-missing": (_no_pool_label, "didn't match Pod's node affinity/selector"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unfittable_pods_stay_pending_with_reason(cluster: Cluster, gpu_nodes, case: str) -> None:
    scenario = deployment_scenario()
    assert scenario, "no committed scenario renders a vllm-inference Deployment"
    ns = f"{scenario.namespace}-{case}"[:63]
    group = next(g for g in pod_groups(render_scenario_chart(scenario, "vllm-inference", ns)) if g.kind == "Deployment")
    shape = shape_for(group, scenario_shapes(scenario))
    mutate, expected = CASES[case]
    if case == "pool-label-missing" and group.pool is None:
        pytest.fail(f"{scenario.name}: the model server does not select a pool ({chart_contract.rendered().pool_label})")
    gpu_nodes(mutate(shape, group.requests), 2)
    cluster.ensure_namespace(ns)
    release = RELEASES["vllm-inference"]
    try:
        cluster.helm(HELM, ["install", release, scenarios.chart_package("vllm-inference"), "--namespace", ns,
                            "--values", str(scenario.values("vllm-inference"))])
        selector = f"app.kubernetes.io/instance={release}"
        pod = wait_for("an unschedulable model-server pod",
                       lambda: next((p for p in cluster.pods(ns, selector) if cluster.scheduler_reason(p)), None),
                       timeout=60)
        # It stays Pending: give the scheduler a few more attempts, then look again.
        time.sleep(5)
        reason = cluster.scheduler_reason(pod)
        assert expected in reason, reason
        pod = cluster.core.read_namespaced_pod(pod.metadata.name, ns)
        assert pod.status.phase == "Pending" and not pod.spec.node_name
        print(f"{case}: {pod.metadata.name} Pending: {reason}")
    finally:
        cleanup(cluster, HELM, ns)

"""Every committed values/ scenario on the real control plane: install the charts with Helm
(--wait), check every object is stored, the model-server pods run on the intended pool and the
pool's DaemonSets land on its nodes, upgrade with a changed engine argument, roll back,
uninstall, and check nothing is left behind."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import WAIT, cleanup, engine_args, engine_change, ready_pods
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.shapes import (
    RELEASES,
    daemonset_requests,
    nodes_for,
    pod_groups,
    render_scenario_chart,
    scenario_shapes,
    shape_for,
)
from tests.harness import chart_contract

pytestmark = pytest.mark.cluster

SCENARIOS = scenarios.discover()


def test_there_are_scenarios_to_install() -> None:
    # The tier proves nothing without committed scenarios and charts: make that a failure.
    assert SCENARIOS, "values/ holds no scenario (run `make values`)"
    assert any(s.charts() for s in SCENARIOS), "no scenario has values for a chart present in charts/"


def helm_for(index: int) -> str:
    # Helm 3 for the first scenario, Helm 4 for the rest: both clients exercise the API server.
    return "helm3" if index == 0 else "helm4"


def install(cluster: Cluster, helm: str, scenario: scenarios.Scenario, chart: str,
            extra: list[str] | None = None, wait: bool = True) -> None:
    args = ["install", RELEASES[chart], scenarios.chart_package(chart), "--namespace", scenario.namespace,
            "--values", str(scenario.values(chart))]
    if wait:
        args += ["--wait", "--timeout", WAIT]
    cluster.helm(helm, args + (extra or []))


def stored_objects(cluster: Cluster, helm: str, release: str, namespace: str) -> list[dict[str, Any]]:
    """The release's manifest, each object checked to exist in the API server."""
    objs = cluster.helm_manifest(helm, release, namespace)
    missing = [f"{o['kind']}/{o['metadata']['name']}" for o in objs if not cluster.exists(o, namespace)]
    assert not missing, f"release {release}: objects Helm recorded but the API server does not have: {missing}"
    return objs


def workloads(recorded: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [o for o in recorded.get("vllm-inference", []) if o["kind"] in ("Deployment", "StatefulSet", "LeaderWorkerSet", "RayService")]


def workload_text(cluster: Cluster, obj: dict[str, Any], ns: str) -> str:
    """The stored object (not Helm's record of it), as JSON text."""
    stored = cluster.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], ns)
    assert stored is not None, f"{obj['kind']} {obj['metadata']['name']} missing"
    return json.dumps(stored.to_dict())


@pytest.mark.parametrize("index", range(len(SCENARIOS)), ids=[s.name for s in SCENARIOS])
def test_scenario_lifecycle(cluster: Cluster, gpu_nodes, index: int) -> None:
    scenario = SCENARIOS[index]
    helm = helm_for(index)
    ns = scenario.namespace
    charts = scenario.charts()
    assert "vllm-inference" in charts, f"{scenario.name}: vllm-inference chart or values missing (have {charts})"

    # 1. Nodes Karpenter would launch for the pools, as many as the model-server pods fill.
    shapes = scenario_shapes(scenario)
    infra = render_scenario_chart(scenario, "gpu-infra", ns)
    overhead = daemonset_requests(infra)
    workload = render_scenario_chart(scenario, "vllm-inference", ns)
    groups = pod_groups(workload)
    assert groups, f"{scenario.name}: vllm-inference renders no workload"
    node_names: dict[str, list[str]] = {}
    for g in groups:
        if g.controller and g.pool is None and not g.spec.get("nodeSelector"):
            continue  # e.g. a Ray head on general-purpose nodes, and no operator to create it here
        shape = shape_for(g, shapes)
        n = nodes_for(g, shape, overhead)
        node_names.setdefault(shape.pool, []).extend(gpu_nodes(shape, n))

    cluster.ensure_namespace(ns)
    try:
        # 2. Install every chart this scenario has, pools first.
        recorded: dict[str, list[dict[str, Any]]] = {}
        for chart in charts:
            install(cluster, helm, scenario, chart)
            recorded[chart] = stored_objects(cluster, helm, RELEASES[chart], ns)
            cluster.stats.objects_accepted += len(recorded[chart])
        cluster.stats.scenarios_installed.add(scenario.name)

        # 3. Model-server pods: Ready, each on a node of the pool its group selects. Groups an
        # operator would create (LeaderWorkerSet, RayService) are stored only: the operators run
        # only in their own modules (test_lws.py, test_kuberay.py; tests/cluster/README.md).
        selector = f"app.kubernetes.io/instance={RELEASES['vllm-inference']}"
        running = [g for g in groups if not g.controller]
        expected = sum(g.pods for g in running)
        pools = {g.pool for g in running}
        pods = wait_for(f"{expected} Ready model-server pods",
                        lambda: (lambda ps: ps if len(ps) == expected else None)(ready_pods(cluster, ns, selector)),
                        timeout=60) if expected else []
        for pod in pods:
            node = cluster.core.read_node(pod.spec.node_name)
            pool = node.metadata.labels.get("karpenter.sh/nodepool")
            assert pod.spec.node_name in node_names.get(pool, []), (
                f"pod {pod.metadata.name} runs on {pod.spec.node_name} (pool {pool}), not on the scenario's nodes")
            assert None in pools or node.metadata.labels.get(chart_contract.rendered().pool_label) in pools
        cluster.stats.pods_scheduled += len(pods)
        for controller in sorted({g.controller for g in groups if g.controller}):
            print(f"{scenario.name}: stored for the {controller}, which does not run here: no pods")
        if not running:
            assert not cluster.pods(ns, selector), "pods appeared with no controller to create them"

        # 4. gpu-infra DaemonSets (device plugins, DCGM exporter) run on every node they target.
        if "gpu-infra" in recorded:
            for ds in (o for o in recorded["gpu-infra"] if o["kind"] == "DaemonSet"):
                st = cluster.apps.read_namespaced_daemon_set(ds["metadata"]["name"], ns).status
                assert st.desired_number_scheduled >= 1, (
                    f"DaemonSet {ds['metadata']['name']} targets none of the pool's nodes "
                    f"(its node affinity/tolerations do not match the simulated nodes)")
                assert st.number_ready == st.desired_number_scheduled, f"DaemonSet {ds['metadata']['name']}: {st}"
                cluster.stats.pods_scheduled += st.number_ready

        # 5. Upgrade with a changed engine argument; the default strategy rolls out on the same nodes.
        change, marker = engine_change(scenario.values("vllm-inference"))
        cluster.helm(helm, ["upgrade", RELEASES["vllm-inference"], scenarios.chart_package("vllm-inference"),
                            "--namespace", ns, "--values", str(scenario.values("vllm-inference")),
                            *change, "--wait", "--timeout", WAIT])
        cluster.stats.upgrades += 1
        assert all(marker in workload_text(cluster, o, ns) for o in workloads(recorded))
        wait_for("every model-server pod to carry the new argument and be Ready",
                 lambda: (lambda ps: len(ps) == expected and all(marker in engine_args(p) for p in ps))(
                     ready_pods(cluster, ns, selector)), timeout=120)

        # 6. Roll back to the first revision: the argument is gone again.
        cluster.helm(helm, ["rollback", RELEASES["vllm-inference"], "1", "--namespace", ns, "--wait",
                            "--timeout", WAIT])
        cluster.stats.rollbacks += 1
        assert not any(marker in workload_text(cluster, o, ns) for o in workloads(recorded))
        wait_for("the rolled-back pods (without the argument) to be Ready",
                 lambda: (lambda ps: len(ps) == expected and not any(marker in engine_args(p) for p in ps))(
                     ready_pods(cluster, ns, selector)), timeout=120)

        # 7. Uninstall in reverse order; nothing of any release may remain.
        for chart in reversed(charts):
            cluster.helm(helm, ["uninstall", RELEASES[chart], "--namespace", ns, "--wait", "--timeout", WAIT])
            cluster.stats.uninstalls += 1
        for chart, objs in recorded.items():
            wait_for(f"objects of {chart} to be deleted",
                     lambda objs=objs: not [o for o in objs if cluster.exists(o, ns)], timeout=120)
        wait_for("the model-server pods to be gone", lambda: not cluster.pods(ns, selector), timeout=120)
        assert cluster.helm_releases(helm, ns) == [], "helm still lists releases"
        secrets = cluster.core.list_namespaced_secret(ns, label_selector="owner=helm").items
        assert not secrets, f"Helm release records left: {[s.metadata.name for s in secrets]}"
    finally:
        # After a failure: remove cluster-scoped objects too (NodePools...), or the next scenario's
        # install would collide with them.
        cleanup(cluster, helm, ns)

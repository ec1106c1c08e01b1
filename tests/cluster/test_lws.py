"""The LeaderWorkerSet controller (v0.9.0, built by `make cluster-tools`) with its admission
webhooks on the tier's control plane, for every committed multi-node scenario:

- `helm install` (routing.mode gateway, so the InferencePool is rendered too): the controller
  creates the leader StatefulSet and the group's worker StatefulSet, and their pods are
  scheduled and Ready on kwok nodes of the scenario's pool. On the pods the controller created:
  LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX (which the chart's arguments expand)
  in every container, the worker-index labels the chart's Service and InferencePool select on,
  the leader's `http` port as the Service's EndpointSlice and the InferencePool's target port,
  and the leader address resolving through the controller's headless Service.
- Deleting a worker pod recreates the whole group (RecreateGroupOnPodRestart): leader and
  workers come back with new UIDs.
- Group size: alone it is refused by the chart (one pipeline stage per pod); with the matching
  pipeline-parallel size, `helm upgrade` is a new revision that the controller rolls out as
  docs/topologies.md "Changing the group size on upgrade" says: with maxSurge 0 the group is torn
  down and recreated with the new size (never two leaders at once); the rollback does the same.

The module swaps the pinned v0.10.0 LeaderWorkerSet CRD for the controller's own v0.9.0 one
(the render tier keeps validating against v0.10.0; the two differ only in v0.10.0's bounds on
`spec.replicas`) and restores it afterwards. kwok runs no container: vLLM never starts, so
container restarts (the other trigger of RecreateGroupOnPodRestart) are the engine tier's."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client

from tests.cluster import lws_webhooks, scenarios
from tests.cluster.conftest import _crd_dir
from tests.cluster.controlplane import LWS_CONTROLLER, lws_dir, missing_lws
from tests.cluster.flows import cleanup, engine_args, ready_pods
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.shapes import RELEASES, pod_groups, render_scenario_chart, scenario_shapes, shape_for
from tests.cluster.test_routing import GATEWAY
from tests.harness.helm import HelmError

pytestmark = pytest.mark.cluster

HELM = "helm4"
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_ENV = ("LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX")


def _multi_node(s: scenarios.Scenario) -> bool:
    f = s.values("vllm-inference")
    return bool(f) and (yaml.safe_load(f.read_text()) or {}).get("topology") == "multi-node"


SCENARIOS = [s for s in scenarios.discover() if _multi_node(s)]


def test_there_are_multi_node_scenarios() -> None:
    assert SCENARIOS, "no committed scenario has topology multi-node (run `make values`)"


@pytest.fixture(scope="module")
def lws(cluster: Cluster) -> Iterator[Cluster]:
    missing = missing_lws()
    if missing:
        pytest.fail(f"LeaderWorkerSet controller missing: {', '.join(missing)}; run `make cluster-tools` "
                    "(tools/cluster/build.sh builds it from sigs.k8s.io/lws)", pytrace=False)
    swapped = cluster.apply_crds(lws_dir() / "crds")
    try:
        server, started = cluster.plane.start_lws_controller()
        lws_webhooks.register(cluster, lws_webhooks.configurations(lws_dir() / "webhook-manifests.yaml", server))
        cluster.stats.timings["lws_s"] = started
        yield cluster
    finally:
        # The webhooks first: with failurePolicy Fail, a pod webhook without its server would
        # refuse the LWS-labelled pods of later tests.
        lws_webhooks.unregister(cluster)
        cluster.plane.stop_component(LWS_CONTROLLER)
        cluster.delete_crds([n for n, replaced in swapped.items() if not replaced])
        cluster.apply_crds(_crd_dir(), only=[n for n, replaced in swapped.items() if replaced])


def controller_log(c: Cluster) -> str:
    lines = [ln for ln in c.plane.log_tail(LWS_CONTROLLER, 200).splitlines() if ln and not ln.startswith("\t")]
    return f"\n--- {LWS_CONTROLLER} log (last records) ---\n" + "\n".join(lines[-12:])


def group_pods(c: Cluster, ns: str, name: str) -> list[client.V1Pod]:
    return ready_pods(c, ns, f"{NAME_LABEL}={name}")


def wait_group(c: Cluster, ns: str, name: str, size: int, not_uids: set[str] = frozenset(),
               leaders_seen: list[int] | None = None) -> list[client.V1Pod]:
    """One group of `size` Ready pods (none of them with a UID in not_uids) and nothing else of
    the set left; leaders_seen collects how many leaders existed at each poll."""
    def done() -> list[client.V1Pod] | None:
        every = c.pods(ns, f"{NAME_LABEL}={name}")
        if leaders_seen is not None:
            leaders_seen.append(sum(1 for p in every if (p.metadata.labels or {}).get(WORKER_LABEL) == "0"))
        ready = group_pods(c, ns, name)
        fresh = [p for p in ready if p.metadata.uid not in not_uids]
        return fresh if len(fresh) == size == len(every) else None
    try:
        return wait_for(f"LeaderWorkerSet {name}: a group of {size} new pods Ready", done, timeout=120)
    except AssertionError as exc:
        pending = [f"{p.metadata.name}: {c.scheduler_reason(p)}" for p in c.pods(ns, f"{NAME_LABEL}={name}")
                   if p.status.phase == "Pending"]
        raise AssertionError(f"{exc}\nPending: {pending}{controller_log(c)}") from None


def env_of(container: client.V1Container) -> dict[str, str]:
    return {e.name: e.value for e in container.env or [] if e.name in LWS_ENV}


def check_group(c: Cluster, ns: str, lws_name: str, pods: list[client.V1Pod], size: int, nodes: list[str]) -> None:
    """What the chart relies on, read from the pods the controller created."""
    by_index = {p.metadata.labels.get(WORKER_LABEL): p for p in pods}
    assert sorted(by_index, key=int) == [str(i) for i in range(size)], f"worker-index labels {sorted(by_index)}"
    leader = by_index["0"]
    group = leader.metadata.labels[GROUP_LABEL]
    address = f"{lws_name}-{group}.{lws_name}.{ns}"
    for index, pod in by_index.items():
        assert pod.metadata.labels.get(GROUP_LABEL) == group, f"{pod.metadata.name} in another group"
        assert pod.spec.node_name in nodes, f"{pod.metadata.name} on {pod.spec.node_name}, not the pool's nodes"
        assert pod.spec.subdomain == lws_name, f"{pod.metadata.name} subdomain {pod.spec.subdomain}"
        for ct in [*(pod.spec.init_containers or []), *pod.spec.containers]:
            want = {"LWS_LEADER_ADDRESS": address, "LWS_GROUP_SIZE": str(size), "LWS_WORKER_INDEX": index}
            assert env_of(ct) == want, f"{pod.metadata.name}/{ct.name}: LWS env {env_of(ct)}, want {want}"
        args = " ".join(engine_args(pod))
        assert "--nnodes $(LWS_GROUP_SIZE)" in args and "$(LWS_LEADER_ADDRESS)" in args, args
        assert ("--node-rank 0" in args) if index == "0" else ("--node-rank $(LWS_WORKER_INDEX)" in args), args
    # The leader address resolves through the controller's headless Service (SubdomainShared).
    headless = c.core.read_namespaced_service(lws_name, ns)
    assert headless.spec.cluster_ip == "None", headless.spec


def check_selection(c: Cluster, ns: str, pods: list[client.V1Pod]) -> None:
    """The chart's Service, InferencePool and PodDisruptionBudget, as stored, against the
    controller's pods: the Service and the pool select the leader only, on its `http` port."""
    (leader,) = [p for p in pods if p.metadata.labels.get(WORKER_LABEL) == "0"]
    http = {p.name: p.container_port for ct in leader.spec.containers for p in ct.ports or []}["http"]

    def selected(match: dict[str, str]) -> set[str]:
        return {p.metadata.name for p in pods if all(p.metadata.labels.get(k) == v for k, v in match.items())}

    (svc,) = [s for s in c.core.list_namespaced_service(ns).items if s.metadata.name.endswith("-api")]
    assert selected(svc.spec.selector) == {leader.metadata.name}, svc.spec.selector
    # The endpoints controller resolved targetPort `http` on the selected pod.
    def slice_endpoints() -> list[tuple[str, int]] | None:
        slices = client.DiscoveryV1Api(c.api).list_namespaced_endpoint_slice(
            ns, label_selector=f"kubernetes.io/service-name={svc.metadata.name}").items
        got = [(a, port.port) for s in slices for e in s.endpoints or [] for a in e.addresses
               for port in s.ports or []]
        return got or None
    endpoints = wait_for(f"EndpointSlice of {svc.metadata.name}", slice_endpoints, timeout=30)
    assert endpoints == [(leader.status.pod_ip, http)], endpoints
    (pool,) = c.custom.list_namespaced_custom_object("inference.networking.k8s.io", "v1", ns, "inferencepools")["items"]
    assert selected(pool["spec"]["selector"]["matchLabels"]) == {leader.metadata.name}, pool["spec"]["selector"]
    assert [t["number"] for t in pool["spec"]["targetPorts"]] == [http]
    (pdb,) = client.PolicyV1Api(c.api).list_namespaced_pod_disruption_budget(ns).items
    assert selected(pdb.spec.selector.match_labels) == {p.metadata.name for p in pods}, pdb.spec.selector


@pytest.mark.parametrize("index", range(len(SCENARIOS)), ids=[s.name for s in SCENARIOS])
def test_controller_runs_the_group(lws: Cluster, gpu_nodes, index: int) -> None:
    c = lws
    scenario = SCENARIOS[index]
    ns = f"{scenario.namespace}-lws"[:63]
    chart = scenarios.chart_package("vllm-inference")
    values = ["--values", str(scenario.values("vllm-inference")), *GATEWAY]
    release = RELEASES["vllm-inference"]
    (lws_obj,) = [o for o in render_scenario_chart(scenario, "vllm-inference", ns) if o["kind"] == "LeaderWorkerSet"]
    name, size = lws_obj["metadata"]["name"], int(lws_obj["spec"]["leaderWorkerTemplate"]["size"])
    # One node per pod, for the group after the size change too (maxSurge 0: never both groups).
    # (leader and worker templates select the same pool)
    leader_group = pod_groups([lws_obj])[0]
    nodes = gpu_nodes(shape_for(leader_group, scenario_shapes(scenario)), size + 1)
    c.ensure_namespace(ns)
    try:
        c.helm(HELM, ["install", release, chart, "--namespace", ns, *values])
        c.stats.objects_accepted += len(c.helm_manifest(HELM, release, ns))
        c.stats.scenarios_installed.add(scenario.name)

        # 1. The controller's group: leader + workers Ready on the pool's nodes, with the env,
        # labels and ports the chart relies on.
        pods = wait_group(c, ns, name, size)
        check_group(c, ns, name, pods, size, nodes)
        check_selection(c, ns, pods)
        c.stats.lws_groups += 1
        c.stats.lws_pods_created += len(pods)
        print(f"{scenario.name}: LeaderWorkerSet {name} size {size}: {len(pods)} pods created and Ready "
              f"({', '.join(sorted(p.metadata.name for p in pods))})")

        # 2. A deleted worker recreates the whole group (RecreateGroupOnPodRestart).
        worker = next(p for p in pods if p.metadata.labels[WORKER_LABEL] != "0")
        t0 = time.monotonic()
        c.core.delete_namespaced_pod(worker.metadata.name, ns)
        old = {p.metadata.uid for p in pods}
        pods = wait_group(c, ns, name, size, not_uids=old)
        recreate_s = time.monotonic() - t0
        check_group(c, ns, name, pods, size, nodes)
        c.stats.lws_recreates += 1
        c.stats.lws_pods_created += len(pods)
        print(f"{scenario.name}: worker {worker.metadata.name} deleted: group recreated "
              f"({len(pods)} new pods Ready) in {recreate_s:.1f}s")

        # 3. Group size alone: the chart refuses (one pipeline stage per pod), nothing is sent.
        with pytest.raises(HelmError) as err:
            c.helm(HELM, ["upgrade", release, chart, "--namespace", ns, *values,
                          "--set-json", f"multiNode.groupSize={size + 1}"])
        refusal = err.value.stderr
        assert "multiNode.groupSize" in refusal and "pipelineParallelSize" in refusal, refusal

        # 4. Size and pipeline-parallel size together: a new revision, rolled out with maxSurge 0
        # by tearing the group down and creating one of the new size.
        old = {p.metadata.uid for p in pods}
        leaders: list[int] = []
        t0 = time.monotonic()
        c.helm(HELM, ["upgrade", release, chart, "--namespace", ns, *values,
                      "--set-json", f"multiNode.groupSize={size + 1}",
                      "--set-json", f"engine.pipelineParallelSize={size + 1}"])
        c.stats.upgrades += 1
        pods = wait_group(c, ns, name, size + 1, not_uids=old, leaders_seen=leaders)
        resize_s = time.monotonic() - t0
        check_group(c, ns, name, pods, size + 1, nodes)
        assert max(leaders) <= 1, f"two groups at once during a maxSurge 0 rollout: {leaders}"
        stored = c.get("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", name, ns)
        assert int(stored.spec.leaderWorkerTemplate.size) == size + 1
        c.stats.lws_resizes += 1
        c.stats.lws_pods_created += len(pods)

        # 5. Rollback: the same roll back to the first size.
        old = {p.metadata.uid for p in pods}
        c.helm(HELM, ["rollback", release, "1", "--namespace", ns])
        c.stats.rollbacks += 1
        pods = wait_group(c, ns, name, size, not_uids=old)
        check_group(c, ns, name, pods, size, nodes)
        c.stats.lws_pods_created += len(pods)
        print(f"{scenario.name}: size {size} -> {size + 1} by helm upgrade: group replaced by {size + 1} pods "
              f"in {resize_s:.1f}s (at most {max(leaders)} leader at a time); rollback -> {size} pods")
    finally:
        cleanup(c, HELM, ns)


"""The KubeRay operator (v1.6.2, built by `make cluster-tools`) on the tier's control plane, for
every committed RayService scenario (ray-serve, disaggregated): it turns the RayService into a
RayCluster whose head and workers are scheduled and Ready on kwok nodes of the right pools; the
autoscaler sidecar (ray-serve) holds the ServiceAccount token and nothing else does; Ray's token
authentication (the chart's authOptions) gets a generated Secret per RayCluster, whose token the
operator hands to every container that runs Ray; changing the
cluster config (`helm upgrade` with another Ray image tag) makes it build the second RayCluster
the NewCluster upgrade needs, and the gpu-infra pool's GPU limit admits its pods. The chart's
PodDisruptionBudgets select, on the operator's pod labels, exactly the head(s) or exactly one
worker group, before and during the upgrade.

test_rayservice_status_and_upgrade_paths follows the operator's status and its choice between
an in-place serveConfigV2 update and a new cluster, step by step.

kwok runs no container, so no Ray process answers the operator: Serve never reports RUNNING and
the operator never promotes a cluster to active on its own. The test does that one step itself
(the status change `reconcilePromotionAndServingStatus` makes once Serve is healthy) before the
upgrade; tests/cluster/README.md lists what stays untested.

The module swaps the pinned v1.7.0 ray.io CRDs for the operator's own v1.6.2 ones while it runs
and restores them afterwards, so the other tests keep validating against v1.7.0."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from tests.cluster import rayservice_status as rstatus
from tests.cluster import scenarios
from tests.cluster.conftest import _crd_dir
from tests.cluster.controlplane import KUBERAY_OPERATOR, kuberay_crd_dir, missing_kuberay
from tests.cluster.flows import WAIT, cleanup, engine_change, ready_pods
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.nodes import DEFAULT_ZONE, NodeShape
from tests.cluster.rayservice_status import RAY, SPEC_HASH, operator_records
from tests.cluster.shapes import RELEASES, pod_groups, render_scenario_chart, scenario_shapes, shape_for
from tests.harness import chart_contract
from tests.harness.helm import HelmError
from tests.harness.pods import CreatedPod, ingress_admits
from vllm_eks.core import contract

pytestmark = pytest.mark.cluster

HELM = "helm4"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
RAY_TOPOLOGIES = ("ray-serve", "disaggregated")
SCENARIOS = [s for s in scenarios.discover() if (s.plan or {}).get("topology") in RAY_TOPOLOGIES]


def test_there_are_rayservice_scenarios() -> None:
    assert SCENARIOS, f"no committed scenario has topology {RAY_TOPOLOGIES} (run `make values`)"
    assert {s.plan["topology"] for s in SCENARIOS} == set(RAY_TOPOLOGIES)


@pytest.fixture(scope="module")
def kuberay(cluster: Cluster) -> Iterator[Cluster]:
    missing = missing_kuberay()
    if missing:
        pytest.fail(f"KubeRay operator missing: {', '.join(missing)}; run `make cluster-tools` "
                    "(tools/cluster/build.sh builds it from github.com/ray-project/kuberay/ray-operator)",
                    pytrace=False)
    swapped = cluster.apply_crds(kuberay_crd_dir())
    try:
        cluster.stats.timings["kuberay_s"] = cluster.plane.start_kuberay_operator()
        yield cluster
    finally:
        cluster.plane.stop_component(KUBERAY_OPERATOR)
        cluster.delete_crds([n for n, replaced in swapped.items() if not replaced])
        cluster.apply_crds(_crd_dir(), only=[n for n, replaced in swapped.items() if replaced])


def operator_log(c: Cluster) -> str:
    """The operator's last log records, without the Go stack frames it prints under errors."""
    lines = [ln for ln in c.plane.log_tail(KUBERAY_OPERATOR, 400).splitlines()
             if ln and not ln.startswith(("\t", "sigs.k8s.io/", "github.com/", "k8s.io/"))]
    return f"\n--- {KUBERAY_OPERATOR} log (last records) ---\n" + "\n".join(lines[-15:])


def pruned(rendered: Any, stored: Any, path: str = "") -> list[str]:
    """Paths of `rendered` missing from `stored`: what the operator's CRD schema dropped."""
    if isinstance(rendered, dict):
        if not isinstance(stored, dict):
            return [path or "/"]
        return [m for k, v in rendered.items()
                for m in ([f"{path}.{k}"] if k not in stored else pruned(v, stored[k], f"{path}.{k}"))]
    if isinstance(rendered, list) and isinstance(stored, list) and len(rendered) == len(stored):
        return [m for i, (a, b) in enumerate(zip(rendered, stored)) for m in pruned(a, b, f"{path}[{i}]")]
    return []


def head_node_shape() -> NodeShape:
    """A general-purpose on-demand node (no GPU, no taint) for the Ray head, which stays off the
    GPU pool; sized like an m6i.2xlarge after the kubelet's reserve."""
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", contract.ZONE_LABEL: DEFAULT_ZONE,
              contract.CAPACITY_TYPE_LABEL: "on-demand", contract.INSTANCE_TYPE_LABEL: "m6i.2xlarge"}
    res = {"cpu": "7910m", "memory": "29Gi", "pods": "58", "ephemeral-storage": "80Gi"}
    return NodeShape("general", "m6i.2xlarge", labels, [], res, dict(res), "general-purpose node for the Ray head")


def gpu_limit(infra: list[dict[str, Any]], pool: str) -> int:
    (np,) = [o for o in infra if o["kind"] == "NodePool" and o["metadata"]["name"] == pool]
    return int(np["spec"]["limits"][contract.GPU_RESOURCE])


def rayclusters(c: Cluster, ns: str) -> list[dict[str, Any]]:
    return c.custom.list_namespaced_custom_object(*RAY, ns, "rayclusters")["items"]


def cluster_pods(c: Cluster, ns: str, name: str) -> list[client.V1Pod]:
    return ready_pods(c, ns, f"ray.io/cluster={name}")


def expected_pods(rc: dict[str, Any]) -> int:
    return 1 + sum(int(g.get("replicas", 0)) * int(g.get("numOfHosts", 1)) for g in rc["spec"]["workerGroupSpecs"])


def wait_cluster_ready(c: Cluster, ns: str, name: str) -> list[client.V1Pod]:
    rc = c.custom.get_namespaced_custom_object(*RAY, ns, "rayclusters", name)
    want = expected_pods(rc)
    try:
        return wait_for(f"RayCluster {name}: {want} pods Ready",
                        lambda: (lambda ps: ps if len(ps) == want else None)(cluster_pods(c, ns, name)), timeout=120)
    except AssertionError as exc:
        pending = [f"{p.metadata.name}: {c.scheduler_reason(p)}" for p in c.pods(ns, f"ray.io/cluster={name}")
                   if p.status.phase == "Pending"]
        raise AssertionError(f"{exc}\nPending: {pending}{operator_log(c)}") from None


def gpus(pod: client.V1Pod) -> int:
    return sum(int((ct.resources.limits or {}).get(contract.GPU_RESOURCE, 0)) for ct in pod.spec.containers)


def mounts_token(container: client.V1Container) -> bool:
    return any(m.mount_path == SA_DIR for m in container.volume_mounts or [])


def check_placement(c: Cluster, pods: list[client.V1Pod], head_nodes: list[str], pool_nodes: dict[str, list[str]]) -> None:
    label = chart_contract.rendered().pool_label
    for p in pods:
        kind = p.metadata.labels.get("ray.io/node-type")
        node = p.spec.node_name
        if kind == "head":
            assert node in head_nodes, f"head {p.metadata.name} on {node}, not on the general-purpose node"
            continue
        pool = p.spec.node_selector.get(label)
        assert pool and node in pool_nodes.get(pool, []), (
            f"worker {p.metadata.name} (pool {pool}) runs on {node}, not on that pool's nodes")


def check_token_and_rbac(c: Cluster, ns: str, rc_name: str, pods: list[client.V1Pod], autoscaling: bool) -> None:
    """Defect 1: the autoscaler (head sidecar) has the ServiceAccount token, and the Role /
    RoleBinding KubeRay made for it bind our ServiceAccount; no other container has a token."""
    (head,) = [p for p in pods if p.metadata.labels.get("ray.io/node-type") == "head"]
    names = [ct.name for ct in head.spec.containers]
    with_token = sorted(f"{p.metadata.name}/{ct.name}" for p in pods for ct in p.spec.containers if mounts_token(ct))
    if not autoscaling:
        assert "autoscaler" not in names and not with_token, f"containers with a token: {with_token}"
        return
    assert "autoscaler" in names, f"head containers {names}: KubeRay added no autoscaler{operator_log(c)}"
    assert with_token == [f"{head.metadata.name}/autoscaler"], f"containers with a token: {with_token}"
    assert head.spec.automount_service_account_token is False
    sa = head.spec.service_account_name
    rb = c.rbac.read_namespaced_role_binding(rc_name, ns)
    assert [(s.kind, s.name) for s in rb.subjects] == [("ServiceAccount", sa)], rb.subjects
    for verb, resource, group in (("patch", "pods", ""), ("list", "pods", ""), ("patch", "rayclusters", "ray.io")):
        review = client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{ns}:{sa}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{ns}"],
            resource_attributes=client.V1ResourceAttributes(namespace=ns, verb=verb, resource=resource, group=group)))
        allowed = client.AuthorizationV1Api(c.api).create_subject_access_review(review).status.allowed
        assert allowed, f"ServiceAccount {sa} may not {verb} {resource}: the autoscaler could not scale"


def _env(container: client.V1Container) -> dict[str, Any]:
    return {e.name: e for e in container.env or []}


def check_token_auth(c: Cluster, ns: str, rc_name: str, pods: list[client.V1Pod]) -> str:
    """The chart's `authOptions: {mode: token}` as the operator carries it out (ray-operator
    controllers/ray/raycluster_controller.go reconcileAuthSecret, common/pod.go
    SetContainerTokenAuthEnvVars): a Secret named after the RayCluster holds a generated
    `auth_token`, and every container that runs Ray (the Ray container of the head and of each
    worker, their wait-gcs-ready init containers, the autoscaler) gets RAY_AUTH_MODE=token and
    RAY_AUTH_TOKEN from that Secret. Returns the token, so two clusters can be compared."""
    secret = c.core.read_namespaced_secret(rc_name, ns)
    assert set(secret.data or {}) == {"auth_token"}, f"Secret {rc_name} keys {sorted(secret.data or {})}"
    assert (secret.metadata.labels or {}).get("ray.io/cluster") == rc_name
    checked = []
    for p in pods:
        ray_containers = [p.spec.containers[0], *[ct for ct in p.spec.init_containers or []
                                                  if ct.name == "wait-gcs-ready"],
                          *[ct for ct in p.spec.containers if ct.name == "autoscaler"]]
        for ct in ray_containers:
            env = _env(ct)
            where = f"{p.metadata.name}/{ct.name}"
            assert env.get("RAY_AUTH_MODE") and env["RAY_AUTH_MODE"].value == "token", f"{where}: no RAY_AUTH_MODE"
            ref = env["RAY_AUTH_TOKEN"].value_from.secret_key_ref if "RAY_AUTH_TOKEN" in env else None
            assert ref and (ref.name, ref.key) == (rc_name, "auth_token"), f"{where}: RAY_AUTH_TOKEN from {ref}"
            checked.append(where)
    assert any(w.endswith("/wait-gcs-ready") for w in checked), f"no wait-gcs-ready init container in {checked}"
    print(f"{rc_name}: token Secret with auth_token; RAY_AUTH_MODE=token and RAY_AUTH_TOKEN in {len(checked)} "
          "Ray containers")
    return str(secret.data["auth_token"])


OPERATOR_POD = {"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator"}


def check_dashboard_policy(c: Cluster, ns: str, pods: list[client.V1Pod], operator_ns: str) -> None:
    """The NetworkPolicy as the API server stored it, evaluated against the head pod the operator
    created (its labels and ports after defaulting): the dashboard (8265) admits the operator's
    pods and refuses any other pod, of the release namespace or the operator's; the head's other
    Ray ports admit only the release's own Ray pods. No CNI runs here: no packet is dropped."""
    serialize = c.core.api_client.sanitize_for_serialization  # the API's own field names
    stored = [serialize(p) for p in client.NetworkingV1Api(c.api).list_namespaced_network_policy(ns).items]
    stored = [p for p in stored if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/component")
              != "endpoint-picker"]
    assert stored, "the scenario installs the model server's NetworkPolicy"
    (head,) = [p for p in pods if p.metadata.labels.get("ray.io/node-type") == "head"]
    worker = next(p for p in pods if p is not head)
    live = CreatedPod(f"Pod/{head.metadata.name}", ns, dict(head.metadata.labels or {}), serialize(head.spec))
    other = {"app": "anything"}
    assert ingress_admits(stored, live, 8265, operator_ns, OPERATOR_POD)
    assert not ingress_admits(stored, live, 8265, operator_ns, other)
    assert not ingress_admits(stored, live, 8265, ns, other)
    for port in (6379, 52365, 10001):
        assert not ingress_admits(stored, live, port, ns, other), port
        assert ingress_admits(stored, live, port, ns, dict(worker.metadata.labels or {})), port


def check_budgets(c: Cluster, ns: str, pods: list[client.V1Pod]) -> None:
    """Each PodDisruptionBudget the chart installed selects, on the labels the operator put on its
    pods, exactly the head(s) or exactly one worker group's pods (docs/topologies.md "Node drains")."""
    budgets = client.PolicyV1Api(c.api).list_namespaced_pod_disruption_budget(ns).items
    names = {p.metadata.name for p in pods}
    expected: dict[str, set[str]] = {}
    for p in pods:
        labels = p.metadata.labels
        part = "head" if labels["ray.io/node-type"] == "head" else labels["ray.io/group"]
        expected.setdefault(part, set()).add(p.metadata.name)
    selected = {}
    for b in budgets:
        selector = ",".join(f"{k}={v}" for k, v in b.spec.selector.match_labels.items())
        selected[b.metadata.name.rsplit("-ray-", 1)[-1]] = {p.metadata.name for p in c.pods(ns, selector)} & names
    assert selected == expected, f"budgets select {selected}, the operator's pods are {expected}"


def operator_owned_spec(c: Cluster, ns: str, rs_name: str) -> dict[str, Any]:
    """The RayService's rayClusterConfig fields the operator's (non-status) updates own."""
    rs = c.custom.get_namespaced_custom_object(*RAY, ns, "rayservices", rs_name)
    owned: dict[str, Any] = {}
    for entry in rs["metadata"].get("managedFields") or []:
        if entry.get("manager") == "kuberay-operator" and not entry.get("subresource"):
            owned.update(((entry.get("fieldsV1") or {}).get("f:spec") or {}).get("f:rayClusterConfig") or {})
    return owned


@dataclass
class Site:
    """A scenario's RayService as rendered and the kwok nodes made for it."""
    rayservice: dict[str, Any]
    head_nodes: list[str]
    pool_nodes: dict[str, list[str]]
    limits: dict[str, int]  # pool -> the NodePool's GPU limit


def provision(c: Cluster, gpu_nodes, scenario: scenarios.Scenario, ns: str) -> Site:
    """Nodes: Karpenter could launch the pool up to its GPU limit; the head gets a general node.
    Creates the namespace too."""
    infra = render_scenario_chart(scenario, "gpu-infra", ns)
    (rs_obj,) = [o for o in render_scenario_chart(scenario, "vllm-inference", ns) if o["kind"] == "RayService"]
    groups = [g for g in pod_groups([rs_obj]) if g.pool]
    shapes = scenario_shapes(scenario)
    head_nodes = gpu_nodes(head_node_shape(), 1)
    pool_nodes: dict[str, list[str]] = {}
    limits: dict[str, int] = {}
    for pool in sorted({g.pool for g in groups}):
        shape = shape_for(next(g for g in groups if g.pool == pool), shapes)
        limits[pool] = gpu_limit(infra, pool)
        per_node = int(shape.allocatable[contract.GPU_RESOURCE])
        pool_nodes[pool] = gpu_nodes(shape, limits[pool] // per_node)
    c.ensure_namespace(ns)
    return Site(rs_obj, head_nodes, pool_nodes, limits)


def install(c: Cluster, scenario: scenarios.Scenario, ns: str) -> None:
    """gpu-infra (--wait) and vllm-inference. No --wait for vllm-inference: Helm 4 waits by
    kstatus, which reads the RayService's Ready condition, and that needs a Serve application
    (never on kwok; test_rayservice_status_and_upgrade_paths shows the wait failing)."""
    for chart, wait in (("gpu-infra", ["--wait", "--timeout", WAIT]), ("vllm-inference", [])):
        c.helm(HELM, ["install", RELEASES[chart], scenarios.chart_package(chart), "--namespace", ns,
                      "--values", str(scenario.values(chart)), *wait])
    c.stats.scenarios_installed.add(scenario.name)


def promote(c: Cluster, ns: str, rs_name: str, rc_name: str) -> None:
    """What the operator does once the pending cluster's Serve applications run (kwok has no Ray):
    the pending cluster becomes the active one."""
    rs = c.custom.get_namespaced_custom_object(*RAY, ns, "rayservices", rs_name)
    status = rs.get("status") or {}
    assert (status.get("pendingServiceStatus") or {}).get("rayClusterName") == rc_name, status
    # A merge patch (the client sends dict bodies as one); null removes the pending status.
    c.custom.patch_namespaced_custom_object_status(*RAY, ns, "rayservices", rs_name, {"status": {
        "activeServiceStatus": {"rayClusterName": rc_name}, "pendingServiceStatus": None}})


@pytest.mark.parametrize("index", range(len(SCENARIOS)), ids=[s.name for s in SCENARIOS])
def test_operator_reconciles_rayservice(kuberay: Cluster, gpu_nodes, index: int) -> None:
    c = kuberay
    scenario = SCENARIOS[index]
    ns = scenario.namespace + "-kuberay"
    topology = scenario.plan["topology"]
    site = provision(c, gpu_nodes, scenario, ns)
    rs_obj, head_nodes, pool_nodes, limits = site.rayservice, site.head_nodes, site.pool_nodes, site.limits
    rs_name = rs_obj["metadata"]["name"]
    base = ["--namespace", ns]
    try:
        install(c, scenario, ns)
        # The chart sets nothing the v1.6.2 CRD lacks (the render tier checks against v1.7.0):
        # authOptions among them, which a CRD before v1.5.1 would silently prune.
        stored = c.custom.get_namespaced_custom_object(*RAY, ns, "rayservices", rs_name)
        assert not pruned(rs_obj["spec"], stored["spec"]), "fields the KubeRay v1.6.2 CRD pruned"
        assert stored["spec"]["rayClusterConfig"]["authOptions"] == {"mode": "token"}

        # 1. The operator builds one RayCluster; head and workers Ready on the right nodes.
        (first,) = wait_for("the operator to create a RayCluster", lambda: rayclusters(c, ns), timeout=60)
        first_name = first["metadata"]["name"]
        c.stats.rayservices_reconciled += 1
        c.stats.rayclusters_created += 1
        pods = wait_cluster_ready(c, ns, first_name)
        check_placement(c, pods, head_nodes, pool_nodes)
        check_token_and_rbac(c, ns, first_name, pods, autoscaling=topology == "ray-serve")
        first_token = check_token_auth(c, ns, first_name, pods)
        check_dashboard_policy(c, ns, pods, operator_ns="ray-system")
        check_budgets(c, ns, pods)
        c.stats.ray_pods_ready += len(pods)

        # 2. Serving: active cluster at its peak (ray-serve: the autoscaler's maxReplicas).
        promote(c, ns, rs_name, first_name)
        if topology == "ray-serve":
            spec = first["spec"]["workerGroupSpecs"]
            for g in spec:
                g["replicas"] = g["maxReplicas"]
            c.custom.patch_namespaced_custom_object(*RAY, ns, "rayclusters", first_name,
                                                    {"spec": {"workerGroupSpecs": spec}})
            pods = wait_cluster_ready(c, ns, first_name)

        # 3. Upgrade: another Ray image tag changes the cluster config; the operator builds a
        # second RayCluster beside the active one and its pods must fit the pool limit.
        # KubeRay (1.6 and later) adds its finalizer with a full Update of the RayService, which
        # makes it a co-owner of the (atomic) workerGroupSpecs list; Helm 4's server-side apply
        # then refuses any upgrade unless it forces the conflict (docs/topologies.md, "Upgrades
        # under Helm 4"; test_rayservice_status_and_upgrade_paths shows the refusal).
        assert "f:workerGroupSpecs" in operator_owned_spec(c, ns, rs_name), "KubeRay no longer co-owns the worker groups"
        c.helm(HELM, ["upgrade", RELEASES["vllm-inference"], scenarios.chart_package("vllm-inference"), *base,
                      "--values", str(scenario.values("vllm-inference")), "--set", "ray.image.tag=upgrade-check",
                      "--force-conflicts"])
        c.stats.upgrades += 1
        second = wait_for("the operator to create the upgrade's second RayCluster",
                          lambda: [r for r in rayclusters(c, ns) if r["metadata"]["name"] != first_name], timeout=90)
        (second,) = second
        c.stats.rayclusters_created += 1
        new_pods = wait_cluster_ready(c, ns, second["metadata"]["name"])
        assert all(ct.image.endswith(":upgrade-check") for p in new_pods for ct in p.spec.containers
                   if ct.name != "autoscaler")
        old_pods = cluster_pods(c, ns, first_name)
        assert len(old_pods) == len(pods), "the active cluster must keep serving during the upgrade"
        check_placement(c, new_pods, head_nodes, pool_nodes)
        check_token_and_rbac(c, ns, second["metadata"]["name"], new_pods, autoscaling=topology == "ray-serve")
        # The upgrade's cluster has a Secret and a token of its own.
        assert check_token_auth(c, ns, second["metadata"]["name"], new_pods) != first_token
        check_budgets(c, ns, old_pods + new_pods)  # during the upgrade: both clusters' pods
        used = sum(gpus(p) for p in old_pods + new_pods)
        assert used <= sum(limits.values()), f"{used} GPUs in use exceeds the pool limit {limits}"
        print(f"{scenario.name}: RayClusters {first_name} (active, {len(old_pods)} pods) and "
              f"{second['metadata']['name']} (upgrade, {len(new_pods)} pods) Ready together: "
              f"{used} GPUs of the pool limit {limits}")
        c.stats.ray_pods_ready += len(new_pods)
        c.stats.ray_upgrades_admitted += 1
        c.stats.pods_scheduled += len(old_pods) + len(new_pods)
    finally:
        cleanup(c, HELM, ns)


def helm_wait_refusal(c: Cluster, args: list[str]) -> str:
    """Run `helm upgrade ... --wait` that must time out; returns Helm's message. Helm 4 waits with
    kstatus (helm v4.1.4 pkg/kube/statuswait.go `Wait`: the generic status reader and
    fluxcd/cli-utils v0.37.2-flux.1 pkg/kstatus/status `Compute`): InProgress while
    status.observedGeneration differs from metadata.generation (generic.go `checkGeneration`),
    else InProgress while the `Ready` condition is False (status.go `checkReadyCondition`)."""
    try:
        c.helm(HELM, [*args, "--wait", "--timeout", "10s"])
    except HelmError as exc:
        c.stats.upgrades += 1
        return str(exc)
    raise AssertionError(f"helm {' '.join(args[:2])} --wait returned although no Serve application runs here")


def test_rayservice_status_and_upgrade_paths(kuberay: Cluster, gpu_nodes) -> None:
    """The ray-serve scenario under the operator, step by step, against KubeRay v1.6.2's
    rayservice_controller.go (tests/cluster/rayservice_status.py names the log records):

    1. before any Serve application: the status the operator writes and what the helm test
       would find (no <name>-serve-svc);
    2. a serveConfigV2-only change (an engine kwarg): Helm 4 needs --force-conflicts for it too;
       no new RayCluster, the active one untouched; the operator goes on to submit the config to
       the active cluster's dashboard, which kwok cannot answer, so this reconcile writes no
       status (observedGeneration stays behind, and Helm 4's --wait says so);
    3. a rayClusterConfig change (the Ray image) under the chart's NewCluster strategy: a pending
       RayCluster beside the active one, UpgradeInProgress True; its Serve applications never run
       here, so it stays pending and the active cluster is kept."""
    c = kuberay
    (scenario,) = [s for s in SCENARIOS if s.plan["topology"] == "ray-serve"]
    ns = scenario.namespace + "-kuberay-status"
    site = provision(c, gpu_nodes, scenario, ns)
    rs_name = site.rayservice["metadata"]["name"]
    upgrade = ["upgrade", RELEASES["vllm-inference"], scenarios.chart_package("vllm-inference"), "--namespace", ns,
               "--values", str(scenario.values("vllm-inference"))]
    try:
        install(c, scenario, ns)
        (first,) = wait_for("the operator to create a RayCluster", lambda: rayclusters(c, ns), timeout=60)
        first_name = first["metadata"]["name"]
        c.stats.rayservices_reconciled += 1
        c.stats.rayclusters_created += 1
        wait_cluster_ready(c, ns, first_name)

        # 1. With the head Ready, reconcileServe asks the dashboard and gets no answer.
        wait_for("the operator to reach the head's dashboard", lambda: operator_records(
            c, rstatus.DASHBOARD_UNREACHABLE, ns, also=first_name) or None, timeout=60)
        rs = rstatus.rayservice(c, ns, rs_name)
        status = rs["status"]
        print(f"{rs_name} before Serve runs: conditions {rstatus.conditions(rs)}, "
              f"(active, pending) {rstatus.cluster_names(rs)}, (generation, observed) {rstatus.generations(rs)}")
        assert rstatus.cluster_names(rs) == ("", first_name), f"{status}{operator_log(c)}"
        gen, observed = rstatus.generations(rs)
        assert observed == gen, status
        assert rstatus.conditions(rs) == {"Ready": ("False", "Initializing"),
                                          "UpgradeInProgress": ("False", "Initializing")}, status
        # `kubectl get rayservice` columns (the chart's NOTES): serviceStatus "" and 0 endpoints,
        # both omitted when empty; no Serve application status has been read.
        assert "serviceStatus" not in status and "numServeEndpoints" not in status, status
        assert not any((status.get(k) or {}).get("applicationStatuses")
                       for k in ("activeServiceStatus", "pendingServiceStatus")), status
        # The helm test's Service (<name>-serve-svc) and <name>-head-svc come only with a cluster
        # whose Serve applications run (reconcileServicesToReadyCluster); the RayCluster's own
        # head Service (the dashboard URL the operator tried) exists.
        services = {s.metadata.name for s in c.core.list_namespaced_service(ns).items}
        assert {f"{rs_name}-serve-svc", f"{rs_name}-head-svc"}.isdisjoint(services), services
        assert f"{first_name}-head-svc" in services, services
        # The install's generation is 2: the operator's finalizer Update re-encodes the spec from
        # its Go types and so adds `scaleStrategy: {}` to each worker group (numOfHosts is the
        # CRD's default). Helm's rendered list lacks it, which is why every Helm 4 apply of the
        # (atomic) workerGroupSpecs conflicts with the operator (step 2).
        added = pruned(rs["spec"]["rayClusterConfig"]["workerGroupSpecs"],
                       site.rayservice["spec"]["rayClusterConfig"]["workerGroupSpecs"])
        print(f"{rs_name}: generation {gen} after install; stored workerGroupSpecs beyond the rendered: {added}")
        assert gen == 2 and "[0].scaleStrategy" in added, (gen, added)

        promote(c, ns, rs_name, first_name)
        first = c.custom.get_namespaced_custom_object(*RAY, ns, "rayclusters", first_name)
        first_hash, first_uid = first["metadata"]["annotations"][SPEC_HASH], first["metadata"]["uid"]
        first_generation = first["metadata"]["generation"]

        # 2. serveConfigV2 only. Helm 4 applies the whole RayService, worker groups included, so
        # even this change conflicts with the operator's co-ownership of the (atomic)
        # workerGroupSpecs (docs/topologies.md, "Upgrades under Helm 4").
        flags, text = engine_change(scenario.values("vllm-inference"))
        with pytest.raises(HelmError) as refused:
            c.helm(HELM, [*upgrade, *flags])
        assert 'conflict with "kuberay-operator"' in str(refused.value), refused.value
        assert ".spec.rayClusterConfig.workerGroupSpecs" in str(refused.value), refused.value
        assert rstatus.generations(rstatus.rayservice(c, ns, rs_name))[0] == gen, "the refused apply changed nothing"
        on_active = operator_records(c, rstatus.SERVE_ON_ACTIVE, ns, also=first_name)
        unreachable = operator_records(c, rstatus.DASHBOARD_UNREACHABLE, ns, also=first_name)
        refusal = helm_wait_refusal(c, [*upgrade, *flags, "--force-conflicts"])
        rs = rstatus.rayservice(c, ns, rs_name)
        assert text in rs["spec"]["serveConfigV2"]
        assert rstatus.generations(rs) == (gen + 1, gen), rs["status"]
        # The operator took the in-place path for the new generation (the active cluster's Serve
        # reconcile runs only when shouldPrepareNewCluster is false) and stopped at the dashboard.
        wait_for("the operator to reconcile the new serve config on the active cluster", lambda: (
            operator_records(c, rstatus.SERVE_ON_ACTIVE, ns, also=first_name) > on_active
            and operator_records(c, rstatus.DASHBOARD_UNREACHABLE, ns, also=first_name) > unreachable) or None,
            timeout=60)
        # ... and, having written no status, Helm 4's --wait sees the generation not observed.
        assert f"RayService generation is {gen + 1}, but latest observed generation is {gen}" in refusal, refusal
        (same,) = rayclusters(c, ns)
        assert (same["metadata"]["uid"], same["metadata"]["annotations"][SPEC_HASH],
                same["metadata"]["generation"]) == (first_uid, first_hash, first_generation), (
            "a serveConfigV2 change must leave the RayCluster as it is")
        rs = rstatus.rayservice(c, ns, rs_name)
        assert rstatus.cluster_names(rs) == (first_name, ""), rs["status"]
        print(f"{rs_name} after a serveConfigV2 change: one RayCluster {first_name} (spec hash and generation "
              f"unchanged), (generation, observed) {rstatus.generations(rs)}")

        # 3. rayClusterConfig (the Ray image): the NewCluster path.
        c.helm(HELM, [*upgrade, *flags, "--set", "ray.image.tag=upgrade-check", "--force-conflicts"])
        c.stats.upgrades += 1
        (second,) = wait_for("the operator to create the pending RayCluster", lambda: [
            r for r in rayclusters(c, ns) if r["metadata"]["name"] != first_name], timeout=90)
        second_name = second["metadata"]["name"]
        c.stats.rayclusters_created += 1
        assert second["metadata"]["annotations"][SPEC_HASH] != first_hash
        rs = wait_for("the status to name the pending cluster", lambda: (lambda r: r if rstatus.cluster_names(r) == (
            first_name, second_name) else None)(rstatus.rayservice(c, ns, rs_name)), timeout=30)
        gen3, observed3 = rstatus.generations(rs)
        assert (gen3, observed3) == (gen + 2, gen + 2), rs["status"]
        assert rstatus.conditions(rs) == {"Ready": ("False", "Initializing"),
                                          "UpgradeInProgress": ("True", "BothActivePendingClustersExist")}, rs["status"]
        new_pods = wait_cluster_ready(c, ns, second_name)
        # The pending cluster's head is Ready: the operator now asks its dashboard, which never
        # answers, so the cluster never becomes ready and nothing is promoted.
        # (The error names the dashboard URL, <cluster>-head-svc.<ns>.svc.cluster.local:8265.)
        wait_for("the operator to reach the pending cluster's dashboard", lambda: operator_records(
            c, rstatus.DASHBOARD_UNREACHABLE, ns, also=second_name) or None, timeout=60)
        assert operator_records(c, rstatus.SERVE_ON_PENDING, ns, also=second_name)
        rs = rstatus.rayservice(c, ns, rs_name)
        assert rstatus.cluster_names(rs) == (first_name, second_name), rs["status"]
        assert rstatus.conditions(rs)["UpgradeInProgress"] == ("True", "BothActivePendingClustersExist")
        assert {r["metadata"]["name"] for r in rayclusters(c, ns)} == {first_name, second_name}
        assert len(cluster_pods(c, ns, first_name)) == expected_pods(first), "the active cluster keeps its pods"
        assert not operator_records(c, rstatus.DANGLING_SCHEDULED, ns), "no RayCluster is scheduled for deletion"
        print(f"{rs_name} after a rayClusterConfig change: active {first_name}, pending {second_name} "
              f"({len(new_pods)} pods Ready), UpgradeInProgress True; no promotion without Serve")
        c.stats.ray_pods_ready += len(new_pods)
    finally:
        cleanup(c, HELM, ns)

"""The scheduling-fit check: every committed scenario fits, and each kind of broken pair
(charts/gpu-infra vs charts/vllm-inference) is caught with a message naming the mismatch."""

from __future__ import annotations

import copy
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import chart_contract, helm
from tests.harness.paths import CHARTS, VALUES
from tests.harness.tools import tool_path
from vllm_eks.check import scheduling as fit
from vllm_eks.core import contract
from vllm_eks.core.units import parse_quantity

SCENARIOS = sorted(p.parent for p in VALUES.glob("*/vllm-inference.yaml")
                   if (p.parent / "gpu-infra.yaml").is_file())
HELM4 = str(tool_path("helm4"))


def _render(chart: str, values: dict[str, Any] | Path, tmp_path: Path, release: str) -> list[dict[str, Any]]:
    if isinstance(values, dict):
        path = tmp_path / f"{chart}-{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(yaml.safe_dump(values))
    else:
        path = values
    return helm.render(CHARTS / chart, [path], helm="helm4", release=release, namespace="ns")


def _scenario(name_part: str) -> Path:
    matches = [s for s in SCENARIOS if name_part in s.name]
    assert matches, f"no committed scenario matching {name_part!r} in {[s.name for s in SCENARIOS]}"
    return matches[0]


def _load(scenario: Path, chart: str) -> dict[str, Any]:
    return yaml.safe_load((scenario / f"{chart}.yaml").read_text())


def _pair(tmp_path: Path, scenario: Path, infra_change=None, server_change=None):
    """Render a scenario's two charts, applying a change to each side's values first."""
    infra_values, server_values = _load(scenario, "gpu-infra"), _load(scenario, "vllm-inference")
    if infra_change:
        infra_change(infra_values)
    if server_change:
        server_change(server_values)
    return (_render("gpu-infra", infra_values, tmp_path, "gpu-infra"),
            _render("vllm-inference", server_values, tmp_path, "vllm"))


def _pod_spec(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (deploy,) = [o for o in objects if o["kind"] == "Deployment"]
    return deploy["spec"]["template"]["spec"]


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return _pod_spec(objects)["containers"][0]


def _only(mismatches: list[fit.Mismatch], reason: str) -> fit.Mismatch:
    assert mismatches, "the broken pair was not caught"
    found = [m for m in mismatches if m.reason == reason]
    assert found, f"no [{reason}] mismatch in:\n{fit.format_mismatches(mismatches)}"
    return found[0]


# --- every committed scenario fits ---------------------------------------------------------------

def test_scenarios_are_committed() -> None:
    assert SCENARIOS, "no values/<scenario>/ with gpu-infra.yaml and vllm-inference.yaml: run `make values`"


@pytest.mark.render
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_committed_scenario_fits(scenario: Path) -> None:
    mismatches = fit.check_fit(scenario, helm=HELM4)
    assert mismatches == [], fit.format_mismatches(mismatches)


# --- broken pairs ----------------------------------------------------------------------------------

@pytest.mark.render
def test_pool_label_differs(tmp_path: Path) -> None:
    def rename(v):
        v["pools"][0]["name"] = "gpu-somewhere-else"
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"), infra_change=rename)
    (nodepool,) = [o for o in infra if o["kind"] == "NodePool"]
    key = chart_contract.nodepool_pool_label(nodepool)
    assert _pod_spec(server)["nodeSelector"][key] == "llm-vllm-g6e-xlarge", "the pod selects the label gpu-infra sets"
    m = _only(fit.check_objects(infra, server), "pool-label")
    assert m.message == f"selects {key}=llm-vllm-g6e-xlarge, but the NodePools label their nodes {key}=gpu-somewhere-else"


@pytest.mark.render
def test_toleration_missing(tmp_path: Path) -> None:
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    _pod_spec(server)["tolerations"] = []
    m = _only(fit.check_objects(infra, server), "toleration")
    assert "nvidia.com/gpu:NoSchedule" in m.message and m.pool == "llm-vllm-g6e-xlarge"


@pytest.mark.render
def test_gpus_per_pod_above_the_instance(tmp_path: Path) -> None:
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    _container(server)["resources"]["limits"][contract.GPU_RESOURCE] = 4
    m = _only(fit.check_objects(infra, server), "gpu")
    assert m.message == "pod requests 4 nvidia.com/gpu, g6e.xlarge has 1"


@pytest.mark.render
def test_efa_requested_on_an_instance_without_efa(tmp_path: Path) -> None:
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    _container(server)["resources"]["limits"][contract.EFA_RESOURCE] = 1
    m = _only(fit.check_objects(infra, server), "efa")
    assert m.message == "pod requests 1 vpc.amazonaws.com/efa, g6e.xlarge has no EFA interface"


@pytest.mark.render
def test_efa_requested_without_the_efa_device_plugin(tmp_path: Path) -> None:
    infra, server = _pair(tmp_path, _scenario("70b-p5"))
    _container(server)["resources"]["limits"][contract.EFA_RESOURCE] = 32
    m = _only(fit.check_objects(infra, server), "device-plugin")
    assert "no EFA device plugin" in m.message


@pytest.mark.render
def test_memory_request_above_allocatable(tmp_path: Path) -> None:
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    resources = _container(server)["resources"]
    resources["requests"]["memory"] = "28Gi"
    resources["limits"]["memory"] = "28Gi"
    m = _only(fit.check_objects(infra, server), "memory")
    # g6e.xlarge: 29317Mi allocatable; the Plan's 4 GiB DaemonSet reserve (more than the chart's
    # DaemonSets request) comes off it.
    assert m.message.startswith("memory request 28.0 GiB exceeds the 24.6 GiB available on g6e.xlarge")
    assert "allocatable 28.6 GiB" in m.message and "reserve 4.0 GiB" in m.message


@pytest.mark.render
def test_daemonsets_count_against_the_node(tmp_path: Path) -> None:
    """A request that fits after the reserve but not after the gpu-infra DaemonSets (when they
    request more than the reserve) is still caught."""
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    alloc = 29317 * fit.MIB
    small = fit.Reserve(memory_bytes=100 * fit.MIB)
    request = alloc - small.memory_bytes - 100 * fit.MIB  # leaves less than the DaemonSets need
    resources = _container(server)["resources"]
    resources["requests"]["memory"] = str(request)
    resources["limits"]["memory"] = str(request)
    m = _only(fit.check_objects(infra, server, reserve=small), "memory")
    assert "gpu-infra DaemonSets 0.6 GiB" in m.message


@pytest.mark.render
def test_check_fit_keeps_the_plans_daemonset_reserve(tmp_path: Path) -> None:
    """check-fit reads the reserve of the scenario's plan.json: a folder whose pods were sized
    with a smaller reserve than its plan.json states does not fit."""
    scenario = _scenario("g6e-xlarge")
    folder = tmp_path / "scenario"
    folder.mkdir()
    for f in ("gpu-infra.yaml", "vllm-inference.yaml", "plan.json"):
        (folder / f).write_text((scenario / f).read_text())
    assert fit.check_fit(folder, helm=HELM4) == []
    plan = json.loads((folder / "plan.json").read_text())
    plan["daemonset_reserve_cpu_millicores"] += 500
    (folder / "plan.json").write_text(json.dumps(plan))
    m = _only(fit.check_fit(folder, helm=HELM4), "cpu")
    assert f"reserve {plan['daemonset_reserve_cpu_millicores']}m" in m.message


@pytest.mark.render
def test_pool_gpu_limit_below_replicas_times_gpus(tmp_path: Path) -> None:
    def low(v):
        v["pools"][0]["gpuLimit"] = 8
    infra, server = _pair(tmp_path, _scenario("70b-p5"), infra_change=low)
    (deploy,) = [o for o in server if o["kind"] == "Deployment"]
    deploy["spec"]["replicas"] = 3
    m = _only(fit.check_objects(infra, server), "limit")
    assert m.message.startswith("NodePool limits nvidia.com/gpu to 8, but Deployment/")
    assert "need 3 p5.48xlarge node(s) = 24 GPUs" in m.message


@pytest.mark.render
def test_rolling_update_surge_beyond_the_limit(tmp_path: Path) -> None:
    def exact(v):
        v["pools"][0]["gpuLimit"] = 8
    infra, server = _pair(tmp_path, _scenario("70b-p5"), infra_change=exact)
    (deploy,) = [o for o in server if o["kind"] == "Deployment"]
    deploy["spec"]["replicas"] = 1
    deploy["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    m = _only(fit.check_objects(infra, server), "limit")
    assert "a rolling update needs 2 p5.48xlarge node(s) = 16 GPUs" in m.message


@pytest.mark.render
def test_zone_conflict(tmp_path: Path) -> None:
    def pin(v):
        v["pools"][0]["zones"] = ["us-east-1a"]
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"), infra_change=pin)
    _pod_spec(server)["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": contract.ZONE_LABEL, "operator": "In", "values": ["us-east-1b"]}]}]}}}
    m = _only(fit.check_objects(infra, server), "zone")
    assert m.message == ("node affinity requires topology.kubernetes.io/zone in ['us-east-1b'], "
                         "the NodePool offers ['us-east-1a']")


@pytest.mark.render
def test_bottlerocket_with_a_second_nvidia_plugin(tmp_path: Path) -> None:
    # The chart's validate helper refuses this combination, so build it the way it happens in a
    # cluster: a Bottlerocket EC2NodeClass and an NVIDIA plugin DaemonSet from another release.
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    for o in infra:
        if o["kind"] == "EC2NodeClass":
            o["spec"]["amiSelectorTerms"] = [{"alias": "bottlerocket@v1.65.0"}]
    m = _only(fit.check_objects(infra, server), "duplicate-nvidia-plugin")
    assert m.workload.endswith("nvidia-device-plugin") and "Bottlerocket" in m.message


@pytest.mark.render
def test_al2023_without_the_nvidia_plugin(tmp_path: Path) -> None:
    def off(v):
        v["nvidiaDevicePlugin"]["enabled"] = False
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"), infra_change=off)
    m = _only(fit.check_objects(infra, server), "device-plugin")
    assert "no NVIDIA device plugin runs on this pool (al2023 AMI)" in m.message


@pytest.mark.render
def test_bottlerocket_pool_needs_no_plugin(tmp_path: Path) -> None:
    def bottlerocket(v):
        v.update(amiFamily="bottlerocket", amiVersion="v1.65.0")
        v["nvidiaDevicePlugin"]["enabled"] = False
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"), infra_change=bottlerocket)
    assert fit.check_objects(infra, server) == []


@pytest.mark.render
def test_ephemeral_storage_above_the_volume(tmp_path: Path) -> None:
    def no_nvme(v):
        v["pools"][0].pop("instanceStorePolicy", None)
        v["pools"][0]["rootVolume"] = {"sizeGi": 50}
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"), infra_change=no_nvme)
    _container(server)["resources"]["requests"]["ephemeral-storage"] = "100Gi"
    m = _only(fit.check_objects(infra, server), "ephemeral-storage")
    assert "ephemeral-storage request 100.0 GiB exceeds" in m.message


@pytest.mark.render
def test_label_no_pool_defines(tmp_path: Path) -> None:
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    _pod_spec(server)["nodeSelector"]["example.com/team"] = "research"
    m = _only(fit.check_objects(infra, server), "label")
    assert m.message == "selects example.com/team=research, a label this NodePool does not define"


def _relabel(objects: list[dict[str, Any]], old: str, new: str) -> None:
    """Rename a node label key in NodePool template labels, pod nodeSelectors and the DaemonSets'
    required node affinity."""
    for o in objects:
        if o["kind"] == "NodePool":
            labels = o["spec"]["template"]["metadata"]["labels"]
            labels[new] = labels.pop(old)
        elif o["kind"] == "Deployment":
            selector = o["spec"]["template"]["spec"]["nodeSelector"]
            selector[new] = selector.pop(old)
        elif o["kind"] == "DaemonSet":
            affinity = o["spec"]["template"]["spec"].get("affinity") or {}
            required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
            for term in required.get("nodeSelectorTerms") or []:
                for expr in term.get("matchExpressions") or []:
                    if expr["key"] == old:
                        expr["key"] = new


@pytest.mark.render
def test_pool_is_matched_by_labels_not_by_a_known_key(tmp_path: Path) -> None:
    """Any label a NodePool gives its nodes selects it, as for the scheduler: the pool label
    key is the charts' business, not check-fit's."""
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"))
    (nodepool,) = [o for o in infra if o["kind"] == "NodePool"]
    key = chart_contract.nodepool_pool_label(nodepool)
    _relabel(infra + server, key, "example.com/gpu-pool")
    assert fit.check_objects(infra, server) == []
    nodepool["spec"]["template"]["metadata"]["labels"]["example.com/gpu-pool"] = "elsewhere"
    m = _only(fit.check_objects(infra, server), "pool-label")
    assert m.message == ("selects example.com/gpu-pool=llm-vllm-g6e-xlarge, but the NodePools label their nodes "
                         "example.com/gpu-pool=elsewhere")
    nodepool["spec"]["template"]["metadata"]["labels"]["example.com/gpu-pool"] = "llm-vllm-g6e-xlarge"
    _relabel(infra, "example.com/gpu-pool", "example.com/other")
    m = _only(fit.check_objects(infra, server), "label")
    assert m.message == "selects example.com/gpu-pool=llm-vllm-g6e-xlarge, a label this NodePool does not define"


@pytest.mark.render
def test_generic_kinds_leaderworkerset_and_rayservice(tmp_path: Path) -> None:
    """LeaderWorkerSet leader/worker templates and RayService worker groups are checked like
    Deployments, and count their pods against the pool limit."""
    def two_nodes(v):
        v["pools"][0]["gpuLimit"] = 16
    infra, server = _pair(tmp_path, _scenario("70b-p5"), infra_change=two_nodes)
    pod = copy.deepcopy(_pod_spec(server))
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "big"},
           "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "leaderTemplate": {"spec": pod},
                                                            "workerTemplate": {"spec": pod}}}}
    assert fit.check_objects(infra, [lws]) == []  # 2 nodes = 16 GPUs, limit 16
    lws["spec"]["replicas"] = 2
    m = _only(fit.check_objects(infra, [lws]), "limit")
    assert "LeaderWorkerSet/big leader x2" in m.message and "LeaderWorkerSet/big worker x2" in m.message
    bad_worker = copy.deepcopy(pod)
    bad_worker["tolerations"] = []
    ray = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "rs"},
           "spec": {"rayClusterConfig": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
                                         "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1,
                                                               "template": {"spec": bad_worker}}]}}}
    m = _only(fit.check_objects(infra, [ray]), "toleration")
    assert m.workload == "RayService/rs" and m.template == "worker group gpu"


def test_helm_test_pods_are_not_model_servers() -> None:
    hook = {"kind": "Pod", "metadata": {"name": "t", "annotations": {"helm.sh/hook": "test"}},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {contract.GPU_RESOURCE: 1}}}]}}
    assert fit.pod_templates([hook]) == []


# --- building blocks ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("100m", Decimal("0.1")), ("2", Decimal(2)), ("1.5", Decimal("1.5")), ("16Gi", Decimal(16 * 2**30)),
    ("29317Mi", Decimal(29317 * 2**20)), ("1G", Decimal(10**9)), ("1e3", Decimal(1000)), (8, Decimal(8)),
])
def test_parse_quantity(text, value) -> None:
    assert parse_quantity(text) == value


def test_pod_requests_follow_the_scheduler() -> None:
    spec = {
        "initContainers": [
            {"name": "fetch", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
        ],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "2Gi", "nvidia.com/gpu": 1}}},
            {"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
        ],
    }
    req = fit.pod_requests(spec)
    assert req["cpu"] == Decimal(4)                      # the init container is the peak
    assert req["memory"] == Decimal(3 * 2**30)           # limit stands in for a missing request
    assert req["nvidia.com/gpu"] == Decimal(1)


def test_format_mismatches() -> None:
    assert fit.format_mismatches([]) == "every model-server pod fits a GPU pool"
    text = fit.format_mismatches([fit.Mismatch("Deployment/vllm", "pod", "gpu-x", "gpu", "too many")])
    assert text.splitlines() == ["1 scheduling mismatch:", "  - Deployment/vllm (pod) on pool gpu-x: [gpu] too many"]


def test_missing_values_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(fit.FitError, match="gpu-infra.yaml: missing"):
        fit.check_fit(tmp_path, helm=HELM4)


@pytest.mark.render
def test_a_server_that_selects_no_pool_is_refused(tmp_path: Path) -> None:
    """An empty scheduling.pool drops the pool's nodeSelector: the pods fit this folder's pool, but
    the scheduler and Karpenter may place them on any node or NodePool that admits them."""
    def unpin(v):
        v["scheduling"]["pool"] = ""
    infra, server = _pair(tmp_path, _scenario("g6e-xlarge"), server_change=unpin)
    (nodepool,) = [o for o in infra if o["kind"] == "NodePool"]
    key = chart_contract.nodepool_pool_label(nodepool)
    assert key not in (_pod_spec(server).get("nodeSelector") or {})
    m = _only(fit.check_objects(infra, server), "no-pool-selected")
    assert m.workload.startswith("Deployment/") and m.pool is None
    assert f"{key}=llm-vllm-g6e-xlarge" in m.message and "set scheduling.pool" in m.message


@pytest.mark.render
def test_ray_worker_groups_are_checked_at_their_autoscaling_maximum(tmp_path: Path) -> None:
    """Ray Serve autoscaling may grow the GPU worker group to maxReplicas: a pool limit that admits
    the first worker but not the maximum does not fit."""
    scenario = _scenario("rayservice")
    folder = tmp_path / "scenario"
    shutil.copytree(scenario, folder)
    server = _load(folder, "vllm-inference")
    infra = _load(folder, "gpu-infra")
    gpus = server["engine"]["tensorParallelSize"]
    server["rayServe"]["autoscaling"].update(minReplicas=1, maxReplicas=3)
    server["rayServe"]["workers"].update(replicas=1, minReplicas=1, maxReplicas=3)
    infra["pools"][0]["gpuLimit"] = 2 * gpus
    (folder / "vllm-inference.yaml").write_text(yaml.safe_dump(server))
    (folder / "gpu-infra.yaml").write_text(yaml.safe_dump(infra))
    m = _only(fit.check_fit(folder, helm=HELM4), "limit")
    assert m.workload.startswith("RayService/") and "worker group gpu x3" in m.message, m.message
    infra["pools"][0]["gpuLimit"] = 3 * gpus
    (folder / "gpu-infra.yaml").write_text(yaml.safe_dump(infra))
    assert fit.check_fit(folder, helm=HELM4) == []

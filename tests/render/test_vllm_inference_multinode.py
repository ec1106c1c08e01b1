"""charts/vllm-inference topology multi-node: the LeaderWorkerSet, its Service, EFA and NCCL
settings and the diagnostics helm tests, for the ci file and for planner-made and committed Plans
(Helm 3 and Helm 4). Strict validation of every object runs in test_vllm_inference_render.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import chart_contract, helm
from tests.harness.args import (
    contains_run,
    follows_parallel_flags,
    typed_engine_flags,
    untyped_engine_flags,
    value_of,
)
from tests.harness.paths import CHARTS, VALUES
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.core import contract
from vllm_eks.core.topology import keda_scales
from vllm_eks.core.units import parse_quantity
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.spec.plan import Plan
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values
from vllm_eks.values.vllm_inference.images import VLLM_IMAGE_TAG
from vllm_eks.values.vllm_inference.multi_node import NCCL_SOCKET_IFNAME

# The committed scenarios use the default release and namespace.
DEFAULTS = ValuesOptions()

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
CI = CHART / "ci" / "07-multi-node-lws-values.yaml"
NAMESPACE = "llm"
# Old blog posts' settings for the old aws-ofi-nccl; current plugins choose the provider themselves.
OUTDATED_ENV = {"FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE", "RDMAV_FORK_SAFE", "NCCL_PROTO"}
PLANNED = [("llama-3.1-405b-instruct", "p5.48xlarge"), ("deepseek-v3", "p5.48xlarge")]


def lws_of(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (lws,) = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    return lws


def templates(lws: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return lwt["leaderTemplate"], lwt["workerTemplate"]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def assert_multinode_matches_plan(objects: list[dict[str, Any]], plan: Plan,
                                  gpu_infra: dict[str, Any] | None = None) -> None:
    """The rendered LeaderWorkerSet is the Plan: group size x GPUs per pod = TP x PP, EFA per pod
    = the instance's maximum, leader and worker args carry TP, PP and vLLM's multi-node launcher
    (leader rank 0 serving, workers headless), an image declaring efa, only leaders behind
    the Service, the whole group in one zone (the zone of the gpu-infra pool when given)."""
    assert plan.topology == "multi-node"
    lws = lws_of(objects)
    spec = lws["spec"]
    lwt = spec["leaderWorkerTemplate"]
    leader, worker = templates(lws)
    (lc,) = leader["spec"]["containers"]
    (wc,) = worker["spec"]["containers"]
    # KEDA scales the groups: the chart leaves the count out (the Plan's is the ScaledObject's minimum)
    assert spec.get("replicas") == (None if keda_scales(plan.topology) else plan.layout.replicas)
    assert lwt["size"] == plan.layout.nodes_per_replica == plan.layout.pipeline_parallel_size
    assert lwt["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["startupPolicy"] == "LeaderCreated"

    # GPUs: size x GPUs per pod = TP x PP
    for c in (lc, wc):
        assert c["resources"]["limits"][contract.GPU_RESOURCE] == plan.layout.gpus_per_pod
    assert lwt["size"] * plan.layout.gpus_per_pod == plan.layout.tensor_parallel_size * plan.layout.pipeline_parallel_size

    # EFA: the instance's maximum on every pod
    efa_max = instance_catalog()[plan.instance].efa_max
    assert plan.pod.efa_devices_per_pod == efa_max
    for c in (lc, wc):
        assert c["resources"]["limits"].get(contract.EFA_RESOURCE, 0) == efa_max
        assert c["image"] == f"registry.invalid/vllm-eks/vllm-efa:{VLLM_IMAGE_TAG}", "images/vllm-efa build"

    # leader and worker args: the model, TP, PP and every other Plan argument, then vLLM's own
    # multi-node launcher from LWS's environment (no Ray anywhere)
    for c in (lc, wc):
        args = c["args"]
        assert args[0] == plan.model_source
        assert value_of(args, "--tensor-parallel-size") == str(plan.layout.tensor_parallel_size)
        assert value_of(args, "--pipeline-parallel-size") == str(plan.layout.pipeline_parallel_size)
        assert "--distributed-executor-backend" not in args
        assert follows_parallel_flags(args, typed_engine_flags(plan.engine.settings)), args
        assert contains_run(args, untyped_engine_flags(plan.engine.settings))
        assert value_of(args, "--nnodes") == "$(LWS_GROUP_SIZE)"
        assert value_of(args, "--master-addr") == "$(LWS_LEADER_ADDRESS)"
        assert value_of(args, "--master-port") == "29501"
        script = c["command"][2]
        assert script.startswith(f"sh /opt/vllm-eks/scripts/multi-node.sh{' efa' if plan.pod.efa_devices_per_pod else ''}\n")
        assert script.rstrip().endswith('"$@"') and "exec 'vllm' 'serve'" in script
        assert "ray" not in " ".join(c["command"] + [str(a) for a in c["args"]]).split()
    assert value_of(lc["args"], "--node-rank") == "0" and "--headless" not in lc["args"]
    assert value_of(wc["args"], "--node-rank") == "$(LWS_WORKER_INDEX)" and wc["args"][-1] == "--headless"

    # probes on the leader only; its liveness checks engine progress (a lost worker leaves
    # /health at 200 until a request fails)
    for probe in ("startupProbe", "readinessProbe"):
        assert lc[probe]["httpGet"] == {"path": chart_contract.rendered().health_path,
                                        "port": chart_contract.rendered().serving_port_name}
    live = lc["livenessProbe"]["exec"]["command"]
    assert live[:2] == ["python3", "/opt/vllm-eks/scripts/engine_alive.py"]
    assert live[live.index("--model") + 1] == plan.served_model_name
    assert int(live[live.index("--timeout") + 1]) < lc["livenessProbe"]["timeoutSeconds"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert probe not in wc
    start = lc["startupProbe"]
    assert plan.pod.startup_probe_seconds <= start["failureThreshold"] * start["periodSeconds"]

    # only leaders behind the Service
    (service,) = [o for o in objects if o["kind"] == "Service"]
    selector = service["spec"]["selector"]
    assert selector[contract.LWS_WORKER_INDEX_LABEL] == "0"
    assert service["metadata"]["name"] != lws["metadata"]["name"], "LWS owns a headless Service of its own name"
    for t in (leader, worker):
        labels = t["metadata"]["labels"]
        assert {k: v for k, v in selector.items() if k != contract.LWS_WORKER_INDEX_LABEL}.items() <= labels.items()
        assert contract.LWS_WORKER_INDEX_LABEL not in labels, "the LWS controller sets the index"

    # the whole group in one zone, on the instance's pool
    zones = {t["spec"]["nodeSelector"][contract.ZONE_LABEL] for t in (leader, worker)}
    assert len(zones) == 1
    for t in (leader, worker):
        sel = t["spec"]["nodeSelector"]
        assert sel[chart_contract.rendered().pool_label] == contract.pool_name(plan.instance, DEFAULTS.release, DEFAULTS.namespace)
        assert sel[contract.INSTANCE_TYPE_LABEL] == plan.instance
    if gpu_infra is not None:
        (pool,) = [p for p in gpu_infra["pools"] if p["name"] == contract.pool_name(plan.instance, DEFAULTS.release, DEFAULTS.namespace)]
        assert pool["zones"] == sorted(zones)

    # pod sizing and drain as single-node
    for t, c in ((leader, lc), (worker, wc)):
        shm = next(v for v in t["spec"]["volumes"] if v["name"] == "shm")["emptyDir"]
        assert parse_quantity(shm["sizeLimit"]) == plan.pod.shm_size_bytes
        assert parse_quantity(c["resources"]["requests"]["memory"]) == plan.pod.memory_request_bytes
        assert t["spec"]["terminationGracePeriodSeconds"] == plan.pod.termination_grace_period_seconds

    # NCCL: current aws-ofi-nccl, Pod Identity interface excluded
    for c in (lc, wc):
        env = env_of(c)
        assert env["NCCL_SOCKET_IFNAME"] == NCCL_SOCKET_IFNAME and "pod-id-link0" in env["NCCL_SOCKET_IFNAME"]
        assert not OUTDATED_ENV & set(env)

    # diagnostics: expected all-reduce figure is the instance's network rating
    hw = instance_catalog()[plan.instance]
    pods = [o for o in objects if o["kind"] == "Pod" and "allreduce" in o["metadata"]["name"]]
    if pods:
        cmd = pods[0]["spec"]["containers"][0]["command"]
        assert float(cmd[cmd.index("--expected-gbps") + 1]) == hw.network_mbps / 8000


def render(values_file: Path, helm_version: str = "helm4", **kwargs: Any) -> list[dict[str, Any]]:
    return helm.render(CHART, [values_file], helm=helm_version, namespace=NAMESPACE, **kwargs)


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Plan, Path]]:
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    out = {}
    folder = tmp_path_factory.mktemp("multinode")
    for model, instance in PLANNED:
        plan = make_plan(PlanRequest(model=model, instance=instance))
        path = folder / f"{model}.yaml"
        values = build_values(plan, ValuesOptions(zone="us-west-2b"))
        path.write_text(yaml.safe_dump(values_document(values), sort_keys=False))
        out[model] = (plan, path)
    return out


@pytest.mark.parametrize("model", [m for m, _ in PLANNED])
def test_planned_multinode_values_render_the_plan(model: str, planned, helm_version: str) -> None:
    plan, path = planned[model]
    assert plan.topology == "multi-node" and plan.layout.pipeline_parallel_size == 2
    assert_multinode_matches_plan(render(path, helm_version), plan)


def test_builder_requires_a_zone_for_efa() -> None:
    from vllm_eks.core.errors import VllmEksError
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    plan = make_plan(PlanRequest(model="llama-3.1-405b-instruct", instance="p5.48xlarge"))
    with pytest.raises(VllmEksError, match="--zone"):
        build_values(plan, ValuesOptions())


def test_ci_leader_worker_contract() -> None:
    objects = render(CI)
    lws = lws_of(objects)
    leader, worker = templates(lws)
    (lc,) = leader["spec"]["containers"]
    (wc,) = worker["spec"]["containers"]
    assert lws["spec"]["replicas"] == 2 and lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert lws["spec"]["rolloutStrategy"] == {"type": "RollingUpdate", "rollingUpdateConfiguration": {
        "maxSurge": 0, "maxUnavailable": 1}}
    assert lc["image"] == wc["image"] == "111122223333.dkr.ecr.us-east-1.amazonaws.com/vllm-openai-efa:v0.32.0-efa1.38.0"
    assert {p["name"]: p["containerPort"] for p in lc["ports"]} == {"http": 8000, "vllm-master": 29501}
    assert "ports" not in wc
    assert env_of(lc)["NCCL_DEBUG"] == "INFO"
    assert env_of(lc)["FI_EFA_USE_HUGE_PAGE"] == "0", "no hugepages requested: libfabric must not use them"
    for c in (lc, wc):
        sc = c["securityContext"]
        assert sc["capabilities"] == {"drop": ["ALL"]} and sc["privileged"] is False
    assert value_of(lc["args"], "--max-model-len") == "32768"


def test_hugepages_value_requests_them_and_keeps_libfabric_on_them(tmp_path: Path) -> None:
    extra = tmp_path / "hp.yaml"
    extra.write_text("efa:\n  hugepages2Mi: 5Gi\n")
    objects = helm.render(CHART, [CI, extra], namespace=NAMESPACE)
    leader, _ = templates(lws_of(objects))
    (c,) = leader["spec"]["containers"]
    assert c["resources"]["requests"]["hugepages-2Mi"] == c["resources"]["limits"]["hugepages-2Mi"] == "5Gi"
    assert "FI_EFA_USE_HUGE_PAGE" not in env_of(c)


def test_exclusive_topology_annotation(tmp_path: Path) -> None:
    extra = tmp_path / "ex.yaml"
    extra.write_text("multiNode:\n  exclusiveTopology: topology.k8s.aws/network-node-layer-3\n")
    lws = lws_of(helm.render(CHART, [CI, extra], namespace=NAMESPACE))
    assert lws["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"] == \
        "topology.k8s.aws/network-node-layer-3"
    assert "annotations" not in lws_of(render(CI))["metadata"]


def test_pdb_and_network_policy_cover_the_group() -> None:
    objects = render(CI)
    leader, worker = templates(lws_of(objects))
    (pdb,) = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    for t in (leader, worker):
        assert pdb["spec"]["selector"]["matchLabels"].items() <= t["metadata"]["labels"].items()
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    intra = policy["spec"]["ingress"][0]
    assert "ports" not in intra, "Ray and NCCL use dynamic ports inside the group"
    assert intra["from"][0]["podSelector"]["matchLabels"] == pdb["spec"]["selector"]["matchLabels"]


def test_diagnostics_tests_run_in_the_live_groups() -> None:
    objects = render(CI)
    lws = lws_of(objects)
    name = lws["metadata"]["name"]
    (cm,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-diagnostics")]
    for script in ("gpu_topology.py", "allreduce.py", "run_groups.py"):
        assert cm["data"][script] == (CHART / "files" / "diagnostics" / script).read_text()
    leader, worker = templates(lws)
    for t in (leader, worker):
        (mount,) = [m for m in t["spec"]["containers"][0]["volumeMounts"] if m["name"] == "diagnostics"]
        assert mount["readOnly"] is True
        (vol,) = [v for v in t["spec"]["volumes"] if v["name"] == "diagnostics"]
        assert vol["configMap"]["name"] == cm["metadata"]["name"]
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod" and "-test-" in o["metadata"]["name"]}
    assert set(pods) == {f"{name}-test-gpu-topology", f"{name}-test-allreduce"}
    for pod in pods.values():
        assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
        # One container: the runner finds the groups when the test runs; no pod name is rendered.
        (c,) = pod["spec"]["containers"]
        cmd = c["command"]
        assert cmd[:2] == ["python3", "/opt/vllm-eks/diagnostics/run_groups.py"]
        assert {f"--name={name}", "--group-size=2", "--container=vllm", f"--namespace={NAMESPACE}"} <= set(cmd)
        assert not any(f"{name}-{g}" in " ".join(cmd) for g in range(2))
        (vol,) = [v for v in pod["spec"]["volumes"] if v["name"] == "diagnostics"]
        assert vol["configMap"]["name"] == cm["metadata"]["name"]
    topo_cmd = pods[f"{name}-test-gpu-topology"]["spec"]["containers"][0]["command"]
    assert topo_cmd[-2:] == ["--tp", "8"]
    ar = pods[f"{name}-test-allreduce"]["spec"]["containers"][0]["command"]
    assert ar[ar.index("--expected-gbps") + 1] == "400" and ar[ar.index("--min-fraction") + 1] == "0.25"
    role = next(o for o in objects if o["kind"] == "Role")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                             {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]}]
    assert all(o["metadata"]["annotations"]["helm.sh/hook"] == "test"
               for o in objects if o["kind"] in ("Role", "RoleBinding") or
               (o["kind"] == "ServiceAccount" and o["metadata"]["name"].endswith("-diagnostics")))


def test_gpu_topology_check_off_on_pcie_instances() -> None:
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    plan = make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="g5.12xlarge",
                                 pipeline_parallel_size=2))
    assert plan.topology == "multi-node"
    values = build_values(plan, ValuesOptions(zone="us-east-1a"))
    assert values.diagnostics.gpu_topology.enabled is False  # A10G: PCIe only, nothing to check
    assert values.diagnostics.all_reduce.enabled is True
    assert values.diagnostics.all_reduce.expected_bus_bandwidth_g_bps == 40000 / 8000


def test_single_node_pp_plan_args_stay_rejected() -> None:
    """A multi-node value set must not leak into single-node: PP > 1 there is an error."""
    with pytest.raises(helm.HelmError, match="engine.pipelineParallelSize"):
        helm.render(CHART, [CI], namespace=NAMESPACE, set_values={"topology": "single-node"})


def test_committed_lws_scenarios_exist() -> None:
    names = [p.parent.name for p in VALUES.glob("*/plan.json")
             if json.loads(p.read_text())["topology"] == "multi-node"]
    assert {"llama-3.1-405b-p5-48xlarge-lws", "deepseek-v3-p5-48xlarge-lws"} <= set(names)

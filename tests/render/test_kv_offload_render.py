"""KV cache offload to host memory (--kv-offload-gib, engine.kvOffloadingSize): the Plan's buffer
is rendered as vLLM's --kv-offloading-size on a Deployment and a LeaderWorkerSet and as the
kv_offloading_size engine kwarg on Ray Serve, with /dev/shm and the memory request holding it;
topology disaggregated refuses it in one line, in the generator and in the chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS
from tests.render.test_vllm_inference_rayserve import rayservice, serve_app
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import bytes_quantity
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.plan import Plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
CI = CHART / "ci"

# One request per topology the offload applies to: (id, request, GiB, workload kind)
CASES = [
    ("single-node", dict(model="qwen3-8b", instance="g6e.xlarge"), 8, "Deployment"),
    ("multi-node", dict(model="llama-3.1-405b-instruct", instance="p5.48xlarge", zone="us-east-1a"), 64,
     "LeaderWorkerSet"),
    ("ray-serve", dict(model="llama-3.1-70b-instruct", instance="g6e.12xlarge", topology="ray-serve"), 32,
     "RayService"),
]


def _plan_and_values(tmp: Path, request: dict, gib: float) -> tuple[Plan, Path]:
    zone = request.pop("zone", None)
    plan = make_plan(PlanRequest(**request, kv_offload_gib=gib))
    path = tmp / "values.yaml"
    values = build_values(plan, ValuesOptions(zone=zone) if zone else ValuesOptions())
    path.write_text(yaml.safe_dump(values_document(values), sort_keys=False))
    return plan, path


def _pod_specs(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    (obj,) = [o for o in objects if o["kind"] == kind]
    if kind == "LeaderWorkerSet":
        tpl = obj["spec"]["leaderWorkerTemplate"]
        return [tpl["leaderTemplate"]["spec"], tpl["workerTemplate"]["spec"]]
    if kind == "RayService":
        return [g["template"]["spec"] for g in obj["spec"]["rayClusterConfig"]["workerGroupSpecs"]]
    return [obj["spec"]["template"]["spec"]]


def _shm_limit(spec: dict[str, Any]) -> str:
    (shm,) = [v for v in spec["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory"]
    return shm["emptyDir"]["sizeLimit"]


@pytest.mark.parametrize("case,request_,gib,kind", CASES, ids=[c[0] for c in CASES])
def test_offload_renders_on_each_topology(tmp_path: Path, case: str, request_: dict, gib: float, kind: str) -> None:
    plan, path = _plan_and_values(tmp_path, dict(request_), gib)
    assert plan.kv_offload is not None and plan.kv_offload.kv_offload_bytes == gib * 2**30
    assert plan.json_summary()["kv_offload"]["kv_offload_tokens"] == plan.kv_offload.kv_offload_tokens > 0
    objects = helm.render(CHART, [path], namespace="llm")
    specs = _pod_specs(objects, kind)
    for spec in specs:
        (c,) = [c for c in spec["containers"] if c["resources"].get("limits", {}).get("nvidia.com/gpu")]
        if kind != "RayService":
            args = c["args"]
            assert args.count("--kv-offloading-size") == 1, args
            assert float(args[args.index("--kv-offloading-size") + 1]) == gib
        # vLLM creates the buffer in /dev/shm: the volume holds it beside the ranks' shared memory
        assert _shm_limit(spec) == bytes_quantity(plan.pod.shm_size_bytes)
        assert plan.pod.shm_size_bytes >= plan.kv_offload.kv_offload_host_bytes_per_pod
        assert c["resources"]["requests"]["memory"] == bytes_quantity(plan.pod.memory_request_bytes)
    if kind == "RayService":
        rs = rayservice(objects)
        kwargs = serve_app(rs)["args"]["llm_configs"][0]["engine_kwargs"]
        assert kwargs["kv_offloading_size"] == gib
        # the head runs no engine: its /dev/shm leaves the buffer out
        head = rs["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
        assert int(_shm_limit(head)) == plan.pod.shm_size_bytes - plan.kv_offload.kv_offload_host_bytes_per_pod


def test_chart_refuses_a_shm_that_cannot_hold_the_buffer() -> None:
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [CI / "01-defaults-values.yaml"],
                    set_values={"engine": {"kvOffloadingSize": 4}, "shm": {"sizeLimit": "4Gi"}})
    assert "- shm.sizeLimit: 4Gi does not hold engine.kvOffloadingSize 4 GiB" in str(err.value)


def test_plan_engine_args_carry_the_flag_once() -> None:
    plan = make_plan(PlanRequest(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=4))
    args = plan.engine_args
    assert args[args.index("--kv-offloading-size") + 1] == "4"


def test_without_the_flag_nothing_is_rendered(tmp_path: Path) -> None:
    plan = make_plan(PlanRequest(model="qwen3-8b", instance="g6e.xlarge"))
    assert plan.kv_offload is None and "kv_offload" not in plan.json_summary()
    (c,) = [o for o in helm.render(CHART, [CI / "01-defaults-values.yaml"], namespace="llm")
            if o["kind"] == "Deployment"][0]["spec"]["template"]["spec"]["containers"][:1]
    assert "--kv-offloading-size" not in c["args"]


def test_generator_refuses_disaggregated_in_one_line() -> None:
    with pytest.raises(InvalidOptionError) as err:
        make_plan(PlanRequest(model="qwen3-8b", instance="g6.8xlarge", topology="disaggregated",
                              max_model_len=4096, kv_offload_gib=4))
    msg = str(err.value)
    assert "\n" not in msg and "--kv-offload-gib" in msg and "disaggregated" in msg and "NixlConnector" in msg


def test_chart_refuses_disaggregated_in_one_line() -> None:
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [CI / "09-disaggregated-values.yaml"], namespace="llm",
                    set_values={"engine": {"kvOffloadingSize": 2}, "shm": {"sizeLimit": "8Gi"}})
    lines = [line for line in str(err.value).splitlines() if line.startswith("- ")]
    assert len(lines) == 1, str(err.value)
    assert lines[0].startswith("- engine.kvOffloadingSize: not with topology disaggregated"), lines


@pytest.mark.parametrize("bad", [0, -1, "eight", 5000])
def test_schema_refuses_a_bad_size(bad: Any) -> None:
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [CI / "01-defaults-values.yaml"], set_values={"engine": {"kvOffloadingSize": bad}})
    assert "kvOffloadingSize" in str(err.value)


def test_chart_owns_the_flag() -> None:
    # given twice (engine.args and the typed key) is refused naming the key that owns it
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [CI / "01-defaults-values.yaml"],
                    set_values={"engine": {"kvOffloadingSize": 1, "args": ["--kv-offloading-size=2"]}})
    assert "engine.kvOffloadingSize" in str(err.value)

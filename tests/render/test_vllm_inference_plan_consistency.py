"""The rendered model server equals the Plan: for every committed scenario (values/<scenario>/ with
plan.json and vllm-inference.yaml, written by `make values`) and for Plans made here by the real
planner, the Deployment's args, GPU limit, /dev/shm, requests, probe timings, drain and grace
period are the Plan's numbers, rendered by Helm 3 and Helm 4."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import chart_contract, helm
from tests.harness.args import contains_run, follows_parallel_flags, pairs, typed_engine_flags, untyped_engine_flags
from tests.harness.paths import CHARTS, VALUES
from vllm_eks.core import contract
from vllm_eks.core.topology import keda_scales
from vllm_eks.core.units import parse_quantity
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.spec.plan import Plan
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values

# The committed scenarios use the default release and namespace.
DEFAULTS = ValuesOptions()

pytestmark = pytest.mark.render

# Per-topology consistency checks live next to each topology's render tests.
from tests.render.test_vllm_inference_disagg import assert_disaggregated_matches_plan  # noqa: E402
from tests.render.test_vllm_inference_multinode import assert_multinode_matches_plan  # noqa: E402
from tests.render.test_vllm_inference_rayserve import assert_rayserve_matches_plan  # noqa: E402

CHECKS = {"multi-node": assert_multinode_matches_plan, "ray-serve": assert_rayserve_matches_plan,
          "disaggregated": assert_disaggregated_matches_plan}

CHART = CHARTS / "vllm-inference"
SCENARIOS = sorted(p.parent for p in VALUES.glob("*/plan.json")
                   if (p.parent / "vllm-inference.yaml").is_file())
# Issue 3's single-node scenarios, planned here so the check runs even before `make values`.
PLANNED = [("llama-3.1-8b-instruct", "g6e.xlarge"), ("llama-3.1-70b-instruct", "p5.48xlarge"),
           ("qwen2.5-7b-instruct", "g6.xlarge"), ("llama-3.3-70b-instruct-fp8", "p5.48xlarge"),
           ("gpt-oss-120b", "p5.48xlarge")]


def assert_matches_plan(objects: list[dict[str, Any]], plan: Plan) -> None:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    # KEDA owns the count where it scales the topology: the chart leaves it out, and the Plan's
    # replicas are the ScaledObject's minimum (charts/observability)
    assert deployment["spec"].get("replicas") == (None if keda_scales(plan.topology) else plan.layout.replicas)

    # args: the model first, the typed engine settings right after the parallel flags, the
    # Plan's other engine settings as one unchanged run, and around them only the arguments the
    # chart renders from its own keys, each with the Plan's value
    args = c["args"]
    settings = plan.engine.settings
    assert follows_parallel_flags(args, typed_engine_flags(settings)), args
    run = untyped_engine_flags(settings)
    assert contains_run(args, run), f"the Plan's engine settings are not rendered intact: {run}"
    start = next(i for i in range(len(args)) if args[i:i + len(run)] == run)
    rest = args[:start] + args[start + len(run):]
    assert rest[0] == plan.model_source
    owned = dict(zip(rest[1::2], rest[2::2]))
    assert len(rest) % 2 == 1 and len(owned) == len(rest) // 2, f"unpaired or repeated chart arguments: {rest}"
    assert owned == {"--served-model-name": plan.served_model_name, "--port": str(chart_contract.rendered().serving_port),
                     "--tensor-parallel-size": str(plan.layout.tensor_parallel_size),
                     "--pipeline-parallel-size": str(plan.layout.pipeline_parallel_size),
                     "--shutdown-timeout": str(plan.pod.shutdown_timeout_seconds),
                     **pairs(typed_engine_flags(settings))}

    # GPUs: one model copy per pod, TP across its GPUs
    assert c["resources"]["limits"][contract.GPU_RESOURCE] == plan.layout.gpus_per_pod
    assert plan.layout.gpus_per_pod == plan.layout.tensor_parallel_size * plan.layout.pipeline_parallel_size

    # memory, CPU, disk, /dev/shm
    shm = next(v for v in pod["volumes"] if v["name"] == "shm")["emptyDir"]
    assert shm["medium"] == "Memory" and parse_quantity(shm["sizeLimit"]) == plan.pod.shm_size_bytes
    req = c["resources"]["requests"]
    assert round(parse_quantity(req["cpu"]) * 1000) == plan.pod.cpu_request_millicores
    assert parse_quantity(req["memory"]) == plan.pod.memory_request_bytes
    assert parse_quantity(req["ephemeral-storage"]) == plan.pod.ephemeral_storage_bytes
    assert parse_quantity(c["resources"]["limits"]["memory"]) == plan.pod.memory_request_bytes

    # probes: the startup budget covers the Plan's load time, by less than one period
    start = c["startupProbe"]
    budget = start["failureThreshold"] * start["periodSeconds"]
    assert plan.pod.startup_probe_seconds <= budget < plan.pod.startup_probe_seconds + start["periodSeconds"]
    assert start["httpGet"]["path"] == chart_contract.rendered().health_path

    # drain
    assert c["lifecycle"]["preStop"]["sleep"]["seconds"] == plan.pod.prestop_seconds
    assert pod["terminationGracePeriodSeconds"] == plan.pod.termination_grace_period_seconds
    assert plan.pod.prestop_seconds + plan.pod.shutdown_timeout_seconds <= plan.pod.termination_grace_period_seconds

    # placement on the pool charts/gpu-infra creates for this instance type
    assert pod["nodeSelector"][chart_contract.rendered().pool_label] == contract.pool_name(plan.instance, DEFAULTS.release, DEFAULTS.namespace)
    assert pod["nodeSelector"][contract.INSTANCE_TYPE_LABEL] == plan.instance


def test_committed_scenarios_exist() -> None:
    assert SCENARIOS, "no values/<scenario>/ with plan.json and vllm-inference.yaml: run `make values`"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_committed_scenario_matches_its_plan(scenario: Path, helm_version: str) -> None:
    plan = Plan.from_summary(json.loads((scenario / "plan.json").read_text()))
    objects = helm.render(CHART, [scenario / "vllm-inference.yaml"], helm=helm_version, namespace="llm")
    if plan.topology == "single-node":
        assert_matches_plan(objects, plan)
    else:
        gpu_infra = yaml.safe_load((scenario / "gpu-infra.yaml").read_text())
        CHECKS[plan.topology](objects, plan, gpu_infra)


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Plan, Path]]:
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    out: dict[str, tuple[Plan, Path]] = {}
    folder = tmp_path_factory.mktemp("planned")
    for model, instance in PLANNED:
        plan = make_plan(PlanRequest(model=model, instance=instance))
        path = folder / f"{model}-{instance}.yaml"
        path.write_text(yaml.safe_dump(values_document(build_values(plan, ValuesOptions())), sort_keys=False))
        out[f"{model}@{instance}"] = (plan, path)
    return out


@pytest.mark.parametrize("key", [f"{m}@{i}" for m, i in PLANNED])
def test_planned_values_render_the_plan(key: str, planned, helm_version: str) -> None:
    plan, values_file = planned[key]
    assert plan.topology == "single-node", f"{key}: expected a single-node plan"
    objects = helm.render(CHART, [values_file], helm=helm_version, namespace="llm")
    assert_matches_plan(objects, plan)


def test_a_plan_pinning_the_kv_cache_renders_no_gpu_memory_utilization(tmp_path: Path, helm_version: str) -> None:
    """--kv-cache-memory: the Plan sizes the KV cache in bytes, the values say
    gpuMemoryUtilization null and the server gets --kv-cache-memory-bytes alone."""
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    plan = make_plan(PlanRequest(model="qwen2.5-7b-instruct", instance="g6.xlarge", kv_cache_memory_gib=4))
    assert "gpu_memory_utilization" not in plan.engine.settings
    values = build_values(plan, ValuesOptions())
    assert values.engine.gpu_memory_utilization is None
    path = tmp_path / "kv-pinned.yaml"
    path.write_text(yaml.safe_dump(values_document(values), sort_keys=False))
    objects = helm.render(CHART, [path], helm=helm_version, namespace="llm")
    assert_matches_plan(objects, plan)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    assert "--gpu-memory-utilization" not in deployment["spec"]["template"]["spec"]["containers"][0]["args"]

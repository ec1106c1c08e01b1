"""charts/vllm-inference values: the pydantic model, its generated schema, and the Plan -> values
builder. Rendering is tested in tests/render/test_vllm_inference_*.py."""

from __future__ import annotations

import json
import math
import re

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from tests.harness.paths import CHARTS, VALUES
from vllm_eks.core import contract
from vllm_eks.core.errors import VllmEksError
from vllm_eks.core.units import GIB, bytes_quantity, cpu_quantity, parse_quantity
from vllm_eks.output.scenario_folder import values_document, values_file
from vllm_eks.spec.engine_settings import serve_flags
from vllm_eks.spec.plan import FLAT_SECTIONS, Plan, section_type
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.registry import CHART_BUILDERS
from vllm_eks.values.schema import (
    DOCS_END,
    DOCS_START,
    SchemaError,
    render_schema,
    replace_reference,
    values_reference_markdown,
    values_schema,
)
from vllm_eks.values.vllm_inference.chart import VllmInferenceValues, build_values
from vllm_eks.values.vllm_inference.engine import TYPED_ENGINE_SETTINGS

CHART = CHARTS / "vllm-inference"
TITLE = "vllm-inference values"



SETTINGS = {"dtype": "bfloat16", "max_model_len": 131072, "gpu_memory_utilization": 0.9, "max_num_seqs": 256,
            "enable_prefix_caching": True}


def make_plan(**overrides) -> Plan:
    """A hand-written single-node Plan (numbers chosen to be recognisable, not realistic), given
    as the flat fields of `plan --json` and composed into the Plan's sections."""
    fields = dict(
        model="llama-3.1-70b-instruct", model_source="meta-llama/Llama-3.1-70B-Instruct",
        served_model_name="llama-70b", instance="p5.48xlarge", gpu="h100", gpus_per_node=8,
        gpu_memory_bytes=85_020_000_000, gpu_interconnect="NVSwitch NVLink4 900GB/s", nvlink=True,
        expected_bus_bandwidth_gbytes_per_s=400.0, topology="single-node",
        tensor_parallel_size=8, pipeline_parallel_size=1, nodes_per_replica=1, gpus_per_pod=8,
        replicas=3, dtype="bfloat16", quantization=None, kv_cache_dtype="auto",
        weights_bytes_total=141 * GIB, weights_bytes_per_gpu=18 * GIB, activation_peak_bytes=GIB,
        non_torch_bytes=GIB // 4, cudagraph_bytes=GIB // 2, kv_bytes_per_token_per_gpu=40960,
        block_size=16, available_kv_cache_bytes_per_gpu=50 * GIB, kv_cache_blocks=81920,
        kv_cache_tokens=1_310_720, max_model_len=131072, max_concurrency=10.0,
        gpu_memory_utilization=0.9, kv_cache_memory_bytes=None, max_num_seqs=256,
        max_num_batched_tokens=8192, enable_chunked_prefill=True, enable_prefix_caching=True,
        shm_size_bytes=64 * GIB, efa_devices_per_pod=0, cpu_request_millicores=91500,
        memory_request_bytes=600 * GIB, daemonset_reserve_cpu_millicores=2000,
        daemonset_reserve_memory_bytes=4 * GIB, ephemeral_storage_bytes=160 * GIB + 12345,
        load_bandwidth_bytes_per_s=400 << 20, cache="emptydir", cache_read_bytes_per_s=1000 << 20,
        cache_volume_bytes=151 * GIB, cold_startup_seconds=905, warm_startup_seconds=300, startup_probe_seconds=905,
        shutdown_timeout_seconds=120, prestop_seconds=15, termination_grace_period_seconds=150,
        cost_per_hour_usd=55.04, autoscaling_min_replicas=3, autoscaling_max_replicas=6, pool_nodes=6,
        pool_gpu_limit=56, root_volume_bytes=220 * GIB, instance_store_policy=None, root_volume_iops=16000,
        root_volume_throughput_mib_s=1000, queue_alert_threshold=64, scale_up_period_seconds=905,
        slo_ttft_p99_seconds=0.5, slo_tpot_p99_seconds=0.03, settings=SETTINGS,
        decode_tokens_per_second=114.0, longest_stream_seconds=1151, request_timeout_seconds=2340,
        alb_idle_timeout_seconds=1440, picker_cpu_request_millicores=700, picker_memory_request_bytes=GIB,
        picker_memory_limit_bytes=2 * GIB, picker_prefix_block_size=16, picker_max_prefix_blocks=8192,
        picker_lru_capacity_per_server=81920, quota_instance_class="P",
        quota_on_demand_bucket="Running On-Demand P instances", quota_spot_bucket="All P Spot Instance Requests",
        quota_vcpus_per_node=192, quota_nodes_min=3, quota_nodes_max=6, quota_nodes_upgrade_peak=6,
        quota_nodes_pool_limit=7, quota_vcpus_min=576, quota_vcpus_max=1152, quota_vcpus_upgrade_peak=1152,
        quota_vcpus_pool_limit=1344, quota_upgrade="Deployment rolling update at 6 replicas with maxSurge 0",
    )
    fields.update(overrides)
    top = {k: fields.pop(k) for k in ("model", "model_source", "served_model_name", "instance", "topology")}
    for name in FLAT_SECTIONS:
        cls = section_type(name)
        top[name] = cls(**{k: fields[k] for k in cls.model_fields if k in fields})
    return Plan(**top)


# ---------------------------------------------------------------------------------- builder

def test_builder_takes_every_number_from_the_plan() -> None:
    plan = make_plan()
    v = build_values(plan, ValuesOptions())
    assert v.topology == "single-node"
    assert v.replicas == 3
    assert v.engine.tensor_parallel_size == 8 == plan.layout.gpus_per_pod
    assert v.model.name == plan.model_source and v.model.served_model_name == "llama-70b"
    assert v.shm.size_limit == "64Gi"
    assert v.resources.requests.cpu == "91500m"
    assert v.resources.requests.memory == "600Gi" == v.resources.limits.memory
    assert parse_quantity(v.resources.requests.ephemeral_storage) == plan.pod.ephemeral_storage_bytes
    start = v.probes.startup
    assert start.failure_threshold * start.period_seconds >= plan.pod.startup_probe_seconds
    assert (start.failure_threshold - 1) * start.period_seconds < plan.pod.startup_probe_seconds
    assert v.drain.pre_stop_seconds == 15
    assert v.drain.shutdown_timeout_seconds == 120
    assert v.drain.termination_grace_period_seconds == 150
    assert v.scheduling.pool == contract.pool_name("p5.48xlarge", "vllm", "llm") == "llm-vllm-p5-48xlarge"
    assert v.scheduling.instance_type == "p5.48xlarge"
    assert v.model.huggingface.token_secret.name == "hf-token"


def test_builder_renders_the_engine_settings_in_order() -> None:
    v = build_values(make_plan(), ValuesOptions())
    assert v.engine.args == ["--dtype", "bfloat16", "--enable-prefix-caching"]


def test_builder_writes_the_typed_engine_settings() -> None:
    """max_model_len, max_num_seqs and gpu_memory_utilization go to their engine.* keys and
    nowhere else; a Plan sizing the KV cache by bytes writes gpuMemoryUtilization: null."""
    v = build_values(make_plan(), ValuesOptions())
    assert (v.engine.max_model_len, v.engine.max_num_seqs, v.engine.gpu_memory_utilization) == (131072, 256, 0.9)
    pinned = {k: x for k, x in SETTINGS.items() if k != "gpu_memory_utilization"} | {"kv_cache_memory_bytes": 8 * GIB}
    v = build_values(make_plan(settings=pinned, kv_cache_memory_bytes=8 * GIB), ValuesOptions())
    assert v.engine.gpu_memory_utilization is None
    assert "--kv-cache-memory-bytes" in v.engine.args
    assert values_document(v)["engine"]["gpuMemoryUtilization"] is None
    written = yaml.safe_load(values_file("vllm-inference", v, "single-node"))
    assert "gpuMemoryUtilization" in written["engine"] and written["engine"]["gpuMemoryUtilization"] is None
    jsonschema.Draft7Validator(json.loads((CHART / "values.schema.json").read_text())).validate(values_document(v))
    with pytest.raises(VllmEksError, match="max_num_seqs"):
        build_values(make_plan(settings={"max_model_len": 4096}), ValuesOptions())


def test_serve_flags_forms() -> None:
    assert serve_flags({"max_model_len": 4096, "gpu_memory_utilization": 0.90, "enable_prefix_caching": True,
                        "async_scheduling": False, "kv_transfer_config": {"kv_role": "kv_both"}}) == [
        "--max-model-len", "4096", "--gpu-memory-utilization", "0.9", "--enable-prefix-caching",
        "--no-async-scheduling", "--kv-transfer-config", '{"kv_role":"kv_both"}']


def test_builder_s3_source() -> None:
    plan = make_plan(model_source="s3://bucket/llama-70b/", model_source_kind="s3",
                     settings={"max_model_len": 8192, "max_num_seqs": 16, "enforce_eager": True})
    v = build_values(plan, ValuesOptions(iam_role_arn="arn:aws:iam::111122223333:role/reader"))
    assert v.model.source == "s3" and v.model.name == "s3://bucket/llama-70b/"
    assert v.engine.args == ["--enforce-eager"] and (v.engine.max_model_len, v.engine.max_num_seqs) == (8192, 16)
    assert v.model.huggingface.token_secret.name == ""
    assert v.service_account.annotations == {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/reader"}


@pytest.mark.parametrize(("fields", "message"), [
    ({"model_source_kind": "s3"}, "pod.model_source_kind s3 needs model_source s3://bucket/prefix"),
    ({"model_source": "s3://bucket/m/"}, "model_source s3://bucket/m/: a Hugging Face source takes a repo id; "
                                         "use pod.model_source_kind s3"),
    ({"model_source_kind": "fsx"}, "pod.model_source_kind fsx needs model_source with an absolute path"),
])
def test_builder_refuses_a_plan_whose_kind_and_source_disagree(fields, message) -> None:
    """A Plan read back (plan.json) is checked by the rule the planner applied, and the error
    names the Plan's keys, not flags the user did not give."""
    with pytest.raises(VllmEksError, match=re.escape(message)):
        build_values(make_plan(**fields), ValuesOptions())


def test_builder_pvc_source() -> None:
    plan = make_plan(model_source="/models/llama-70b", model_source_kind="pvc")
    v = build_values(plan, ValuesOptions(pvc_name="fsx"))
    assert v.model.source == "pvc" and v.model.pvc.claim_name == "fsx" and v.model.pvc.mount_path == "/models"
    with pytest.raises(VllmEksError, match="--pvc-name"):
        build_values(plan, ValuesOptions())
    with pytest.raises(VllmEksError, match="under the volume.s mount path"):
        build_values(plan, ValuesOptions(pvc_name="fsx", pvc_mount_path="/data"))


def test_builder_refuses_inconsistent_parallelism() -> None:
    with pytest.raises(VllmEksError, match="pipeline_parallel_size"):
        build_values(make_plan(pipeline_parallel_size=2, nodes_per_replica=2), ValuesOptions())


def test_a_plan_json_whose_derived_layout_disagrees_is_refused() -> None:
    # gpus_per_pod and nodes_per_replica follow from TP and PP; a plan.json that says otherwise
    # was edited by hand and is refused when read, naming the key.
    summary = json.loads((VALUES / "llama-3.1-405b-p5-48xlarge-lws" / "plan.json").read_text())
    assert Plan.from_summary(summary).layout.gpus_per_pod == summary["gpus_per_pod"] == 8
    with pytest.raises(ValueError, match="gpus_per_pod is 4, but the plan's other fields give 8"):
        Plan.from_summary({**summary, "gpus_per_pod": 4})
    with pytest.raises(ValueError, match="nodes_per_replica is 3, but the plan's other fields give 2"):
        Plan.from_summary({**summary, "nodes_per_replica": 3})


def test_builder_registered_and_output_matches_schema() -> None:
    assert CHART_BUILDERS["vllm-inference"] is build_values
    doc = build_values(make_plan(), ValuesOptions()).model_dump(mode="json", by_alias=True, exclude_none=True)
    jsonschema.Draft7Validator(json.loads((CHART / "values.schema.json").read_text())).validate(doc)


def test_builder_with_the_real_planner() -> None:
    from vllm_eks.planning.planner import make_plan as plan_for
    from vllm_eks.spec.request import PlanRequest

    plan = plan_for(PlanRequest(model="qwen2.5-7b-instruct", instance="g6.xlarge"))
    v = build_values(plan, ValuesOptions())
    assert plan.layout.gpus_per_pod == v.engine.tensor_parallel_size
    settings = plan.engine.settings
    # the typed settings in their own keys, the others as engine.args in the Plan's order
    assert (v.engine.max_model_len, v.engine.max_num_seqs, v.engine.gpu_memory_utilization) == (
        settings["max_model_len"], settings["max_num_seqs"], settings["gpu_memory_utilization"])
    assert v.engine.args == serve_flags({k: x for k, x in settings.items() if k not in TYPED_ENGINE_SETTINGS})
    assert not {"--max-model-len", "--max-num-seqs", "--gpu-memory-utilization"} & set(v.engine.args)
    assert plan.engine.settings["max_model_len"] == plan.memory.max_model_len
    assert plan.engine.settings["max_num_seqs"] == plan.engine.max_num_seqs


# ---------------------------------------------------------------------------------- model

def test_model_uses_camel_case_and_forbids_unknown_keys() -> None:
    v = VllmInferenceValues.model_validate({"podDisruptionBudget": {"maxUnavailable": "50%"}})
    assert v.pod_disruption_budget.max_unavailable == "50%"
    with pytest.raises(ValidationError, match="nope"):
        VllmInferenceValues.model_validate({"nope": 1})
    with pytest.raises(ValidationError, match="token"):
        VllmInferenceValues.model_validate({"model": {"huggingface": {"token": "hf_x"}}})
    with pytest.raises(ValidationError):
        VllmInferenceValues.model_validate({"shm": {"sizeLimit": "16GB"}})


def test_values_yaml_defaults_equal_the_model_defaults() -> None:
    """values.yaml is generated from the model (make schemas): its values are the model's defaults."""
    committed = yaml.safe_load((CHART / "values.yaml").read_text())
    expected = VllmInferenceValues().model_dump(mode="json", by_alias=True, exclude_none=True)
    assert committed == expected


def test_values_yaml_documents_every_key() -> None:
    """Every key of values.yaml is preceded by a `# --` comment or sits in a documented group."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    undocumented = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("- ") or ":" not in stripped:
            continue
        key_indent = len(line) - len(line.lstrip())
        j = i - 1
        while j >= 0 and lines[j].strip().startswith("#") and not lines[j].strip().startswith("# --"):
            j -= 1
        documented = j >= 0 and lines[j].strip().startswith("# --")
        value = stripped.split(":", 1)[1].strip()
        is_group = value == ""
        # members of a documented flow/group (e.g. resources.requests.cpu) inherit its comment
        parent_documented = False
        k = i - 1
        while k >= 0:
            prev = lines[k]
            if prev.strip() and not prev.strip().startswith("#") and len(prev) - len(prev.lstrip()) < key_indent:
                m = k - 1
                while m >= 0 and lines[m].strip().startswith("#") and not lines[m].strip().startswith("# --"):
                    m -= 1
                parent_documented = m >= 0 and lines[m].strip().startswith("# --")
                break
            k -= 1
        if not (documented or is_group or parent_documented):
            undocumented.append(stripped)
    assert not undocumented, f"keys without a `# --` comment: {undocumented}"


# ---------------------------------------------------------------------------------- schema

def test_committed_schema_is_generated_from_the_model() -> None:
    assert (CHART / "values.schema.json").read_text() == render_schema(VllmInferenceValues, TITLE), (
        "charts/vllm-inference/values.schema.json is out of date: run `make schemas`")


def _walk(node, path="values"):
    if isinstance(node, dict):
        yield path, node
        for key, sub in node.items():
            yield from _walk(sub, f"{path}.{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            yield from _walk(sub, f"{path}[{i}]")


def test_schema_is_self_contained_strict_draft07() -> None:
    schema = values_schema(VllmInferenceValues, TITLE)
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    objects = [(p, n) for p, n in _walk(schema) if isinstance(n, dict) and "properties" in n]
    assert len(objects) > 20
    # Kubernetes objects passed on as written (base.KubernetesObject): their required keys are
    # declared, any other key is the API server's to check. Every other object is closed.
    passed_on = {"values.properties.extraVolumes.items", "values.properties.extraVolumeMounts.items",
                 "values.properties.scheduling.properties.topologySpreadConstraints.items"}
    assert passed_on <= {p for p, _ in objects}
    for path, node in objects:
        open_ = path in passed_on
        assert node.get("additionalProperties") is open_, path
        for name, prop in node["properties"].items():
            assert prop.get("description"), f"{path}.{name} has no description"
    # default values validate against the schema
    jsonschema.Draft7Validator(schema).validate(VllmInferenceValues().model_dump(mode="json", by_alias=True, exclude_none=True))


def test_schema_keeps_optional_fields_omittable_not_nullable() -> None:
    sc = values_schema(VllmInferenceValues, TITLE)["properties"]["securityContext"]["properties"]
    assert sc["runAsUser"]["type"] == "integer" and "anyOf" not in sc["runAsUser"]


def test_schema_keeps_the_optional_fields_of_an_optional_model_omittable() -> None:
    """An optional model (default None) with optional fields: setting one of them is enough
    (gpu-infra poolDefaults.placementGroup used to require both name and id)."""
    from pydantic import Field

    from vllm_eks.values.base import ValuesModel

    class Inner(ValuesModel):
        name: str | None = Field(None, description="a")
        id: str | None = Field(None, description="b")

    class Outer(ValuesModel):
        inner: Inner | None = Field(None, description="optional")
        kept: Inner = Field(default_factory=Inner, description="always there")

    schema = values_schema(Outer, "x")
    assert "required" not in schema["properties"]["inner"]
    assert "required" not in schema["properties"]["kept"]
    assert schema["required"] == ["kept"]
    jsonschema.Draft7Validator(schema).validate({"inner": {"name": "a"}, "kept": {}})


def test_schema_topology_lists_the_four_topologies() -> None:
    topo = values_schema(VllmInferenceValues, TITLE)["properties"]["topology"]
    assert topo["enum"] == ["single-node", "multi-node", "ray-serve", "disaggregated"]


def test_schema_writer_rejects_recursive_models() -> None:
    from pydantic import BaseModel, ConfigDict, Field

    class Node(BaseModel):
        model_config = ConfigDict(extra="forbid")
        child: "Node | None" = Field(None, description="child")

    with pytest.raises(SchemaError, match="recursive"):
        values_schema(Node, "x")


def test_readme_values_reference_is_generated() -> None:
    readme = (CHART / "README.md").read_text()
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    table = values_reference_markdown(values_schema(VllmInferenceValues, TITLE), defaults)
    assert readme == replace_reference(readme, table), "chart README values reference is out of date: run `make docs`"
    assert DOCS_START in readme and DOCS_END in readme
    for key in ("`model.name`", "`engine.args`", "`engine.maxModelLen`", "`engine.gpuMemoryUtilization`",
                "`disaggregated.decode.maxNumSeqs`", "`extraEnv[].valueFrom`"):
        assert key in table


# ---------------------------------------------------------------------------------- helpers

@pytest.mark.parametrize("n, text", [(2 * GIB, "2Gi"), (1536 << 20, "1536Mi"), (12345, "12345"),
                                     (0, "0"), (3 << 40, "3Ti")])
def test_bytes_quantity(n: int, text: str) -> None:
    assert bytes_quantity(n) == text
    assert parse_quantity(text) == n


@pytest.mark.parametrize("m, text", [(2000, "2"), (2920, "2920m"), (500, "500m")])
def test_cpu_quantity(m: int, text: str) -> None:
    assert cpu_quantity(m) == text
    assert math.isclose(parse_quantity(text) * 1000, m)




def test_pool_name_is_per_release_and_a_label_value() -> None:
    """NodePools are cluster-scoped: the pool of each release (namespace + release) has its own name."""
    names = {contract.pool_name("p5.48xlarge", r, ns) for r in ("vllm", "llama", "gptoss") for ns in ("llm", "team-b")}
    assert len(names) == 6
    long = contract.pool_name("p5.48xlarge", "r" * 53, "n" * 63)
    other = contract.pool_name("p5.48xlarge", "r" * 52 + "s", "n" * 63)
    for name in (long, other, *names):
        assert len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
    assert long != other

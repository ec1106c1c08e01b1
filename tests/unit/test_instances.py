"""The instance catalog: every NVIDIA GPU type of the modelled families, node allocatable
recomputed from each row's shape with Karpenter's formula and compared with what Karpenter v1.14.1
published (tests/unit/data/karpenter_allocatable.csv, its website/content/en/v1.14/reference/
instance-types.md), GPU facts for every GPU model, refusals by name, and plans on small types
that take their pod requests and price from their own row."""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.unit.cli_result import one_line_error
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.node_allocatable import allocatable
from vllm_eks.cli.main import main
from vllm_eks.core.units import MIB, quantity_bytes, quantity_millicores
from vllm_eks.planning import pod_resources as sizing

PUBLISHED = Path(__file__).parent / "data" / "karpenter_allocatable.csv"
FAMILIES = {"g4dn", "g5", "g6", "g6e", "gr6", "g7e", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300"}


def _rows() -> list[dict]:
    return list(csv.DictReader(resources.files("vllm_eks.catalog").joinpath("data/instances.csv").read_text().splitlines()))


def _published() -> dict[str, dict]:
    with open(PUBLISHED) as f:
        return {r["instance"]: r for r in csv.DictReader(f)}


def test_every_catalog_row_has_karpenters_published_allocatable():
    assert {r["instance"] for r in _rows()} == set(_published())


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["instance"])
def test_allocatable_recomputed_from_the_formula_is_karpenters(row):
    pub = _published()[row["instance"]]
    got = allocatable(int(row["vcpu"]), int(row["mem_mib"]), int(row["max_enis"]), int(row["ipv4_per_eni"]))
    assert (got.cpu_millicores, got.memory_mib * MIB, got.max_pods) == (
        quantity_millicores(pub["alloc_cpu"]), quantity_bytes(pub["alloc_mem"]), int(pub["max_pods"]))
    hw = instance_catalog().get(row["instance"])
    if hw is not None:   # the generator's figures are the formula's
        assert (hw.alloc_cpu_millicores, hw.alloc_memory_bytes, hw.max_pods) == (
            got.cpu_millicores, got.memory_mib * MIB, got.max_pods)


def test_every_size_of_every_modelled_family_is_catalogued():
    cat = instance_catalog()
    assert len(cat) >= 40
    assert {n.split(".")[0] for n in cat} == FAMILIES
    counts = {f: sum(n.split(".")[0] == f for n in cat) for f in FAMILIES}
    assert counts == {"g4dn": 7, "g5": 8, "g6": 8, "g6e": 8, "gr6": 2, "g7e": 6, "p4d": 1, "p4de": 1, "p5": 2,
                      "p5e": 1, "p5en": 1, "p6-b200": 1, "p6-b300": 1}
    assert "p5.4xlarge" in cat and cat["p5.4xlarge"].gpus_per_node == 1


def test_every_row_carries_its_price_date_and_every_gpu_model_its_facts():
    gpus = yaml.safe_load(resources.files("vllm_eks.catalog").joinpath("data/gpus.yaml").read_text())["gpus"]
    keys = {(g["karpenter_gpu_name"], int(g["nvidia_smi_mib"])) for g in gpus.values()}
    for g in gpus.values():
        assert g["compute_capability"] and g["bf16_dense_tflops"] and g["memory_bandwidth_gb_s"]
        assert g["cuda_total_source"] and g["speed_source"]
        # a total without bytes is derived by the generator's rule, and the source says so or why
        assert g["cuda_total_bytes"] or "No citable" in g["cuda_total_source"] or "derive" in g["cuda_total_source"]
    for hw in instance_catalog().values():
        assert (hw.gpu, hw.gpu_memory_mib_nvidia_smi) in keys, hw.name
        assert hw.compute_capability is not None and hw.bf16_tflops and hw.memory_bandwidth
        assert hw.gpu_memory_bytes < hw.gpu_memory_mib_nvidia_smi * MIB
        if hw.usd_per_hour is not None:
            assert hw.price_date == "2026-07-06", hw.name
    assert instance_catalog()["p5e.48xlarge"].usd_per_hour is None   # capacity blocks only
    assert {h.gpu for h in instance_catalog().values()} == {
        "t4", "a10g", "l4", "l40s", "rtx-pro-server-6000", "a100", "h100", "h200", "b200", "b300"}
    assert instance_catalog()["g4dn.xlarge"].compute_capability == (7, 5)
    assert instance_catalog()["p6-b300.48xlarge"].compute_capability == (10, 3)


def test_catalog_instances_lists_every_type_with_shape_price_and_date():
    out = CliRunner().invoke(main, ["catalog", "instances", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert len(rows) == len(instance_catalog()) >= 40
    g5 = next(r for r in rows if r["instance"] == "g5.2xlarge")
    assert (g5["vcpus"], g5["memory_gib"], g5["gpus"], g5["gpu_memory_mib_ec2"], g5["efa_max"],
            g5["usd_per_hour"], g5["price_date"]) == (8, 32.0, 1, 22888, 0, 1.212, "2026-07-06")
    for key in ("cuda_gib_per_gpu", "interconnect", "alloc_cpu_m", "alloc_memory_gib"):  # the older columns
        assert key in g5
    table = CliRunner().invoke(main, ["catalog", "instances"])
    assert table.exit_code == 0
    for name in instance_catalog():
        assert name in table.output


@pytest.mark.parametrize("instance", ["g5.2xlarge", "g6e.4xlarge", "p5.4xlarge", "g4dn.xlarge"])
def test_plan_on_a_small_type_sizes_the_pod_from_its_own_row(instance):
    out = CliRunner().invoke(main, ["plan", "--model", "llama-3.1-8b-instruct", "--instance", instance, "--json"])
    assert out.exit_code == 0, out.output
    plan = json.loads(out.output)
    row = next(r for r in _rows() if r["instance"] == instance)
    node = allocatable(int(row["vcpu"]), int(row["mem_mib"]), int(row["max_enis"]), int(row["ipv4_per_eni"]))
    assert plan["gpus_per_pod"] == 1 and plan["cost_per_hour_usd"] > 0
    price = float(row["usd_hr_us_east_1"])
    nodes = round(plan["cost_per_hour_usd"] / price)   # whole nodes at this type's own price
    assert nodes >= 1 and plan["cost_per_hour_usd"] == pytest.approx(nodes * price, abs=0.001)
    share = plan["gpus_per_pod"] / int(row["gpu_count"])
    reserve_cpu, reserve_mem = plan["daemonset_reserve_cpu_millicores"], plan["daemonset_reserve_memory_bytes"]
    assert reserve_cpu == sizing.DEFAULT_DAEMONSET_RESERVE_CPU_M
    assert plan["cpu_request_millicores"] == int((node.cpu_millicores - reserve_cpu) * share) // 10 * 10
    assert plan["memory_request_bytes"] == int((node.memory_mib * MIB - reserve_mem) * share) // MIB * MIB


def test_t4_runs_float16_with_flashinfer_blocks_and_refuses_what_vllm_refuses():
    out = CliRunner().invoke(main, ["plan", "--model", "llama-3.1-8b-instruct", "--instance", "g4dn.xlarge", "--json"])
    plan = json.loads(out.output)
    assert plan["dtype"] == "float16" and plan["block_size"] == 16
    assert "--dtype" in plan["engine_args"] and plan["engine_args"][plan["engine_args"].index("--dtype") + 1] == "float16"
    bf16 = CliRunner().invoke(main, ["plan", "--model", "llama-3.1-8b-instruct", "--instance", "g4dn.xlarge",
                                     "--dtype", "bfloat16"])
    one_line_error(bf16, "--dtype bfloat16", "8.0", "SM 7.5", "float16")
    mxfp4 = CliRunner().invoke(main, ["plan", "--model", "gpt-oss-120b", "--instance", "g4dn.metal"])
    one_line_error(mxfp4, "MXFP4", "SM 7.5")
    sparse = CliRunner().invoke(main, ["plan", "--model", "deepseek-v3.2", "--instance", "g4dn.metal"])
    one_line_error(sparse, "SM 7.5")


@pytest.mark.parametrize("instance, needle", [
    ("trn1.32xlarge", "not a CUDA GPU"), ("inf2.48xlarge", "not a CUDA GPU"), ("g6f.xlarge", "fractional"),
    ("gr6f.4xlarge", "fractional"), ("p6e-gb200.36xlarge", "UltraServer"), ("g5g.xlarge", "Graviton"),
    ("g7.2xlarge", "RTX PRO 4500"), ("p3dn.24xlarge", "V100"), ("g4ad.xlarge", "not a CUDA GPU")])
def test_unmodelled_types_are_refused_by_name_in_one_line(instance, needle):
    out = CliRunner().invoke(main, ["plan", "--model", "llama-3.1-8b-instruct", "--instance", instance])
    err = one_line_error(out, instance, needle, "g4dn, g5, g6")
    assert "not in the catalog" not in err


def _plan(model: str, instance: str) -> dict:
    out = CliRunner().invoke(main, ["plan", "--model", model, "--instance", instance, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.mark.parametrize("model", ["deepseek-v3", "gpt-oss-120b", "llama-3.1-70b-instruct"])
def test_b300_follows_vllms_sm10_rules_as_b200_does(model):
    """vLLM takes SM 10.3 through the same SM 10.x paths as B200 (platforms/cuda.py backend
    priorities by major 10, is_device_capability_family(100) for the MLA and MXFP4 backends):
    block size, backend, capture size and packed layouts match; only the memory differs."""
    b200, b300 = _plan(model, "p6-b200.48xlarge"), _plan(model, "p6-b300.48xlarge")
    assert b300["block_size"] == b200["block_size"] and b300["dtype"] == b200["dtype"] == "bfloat16"
    d200 = {d["key"]: d for d in b200["derivations"]}
    d300 = {d["key"]: d for d in b300["derivations"]}
    for key in ("block_size",):
        assert d300[key]["formula"].replace("b300 (SM 10.3)", "b200 (SM 10.0)") == d200[key]["formula"]
    assert b300["kv_cache_blocks"] > b200["kv_cache_blocks"]


def test_t4_mla_model_gets_triton_mla_blocks():
    plan = _plan("deepseek-v3", "g4dn.metal")
    block = next(d for d in plan["derivations"] if d["key"] == "block_size")
    assert plan["block_size"] == 16 and "TRITON_MLA" in block["formula"] and plan["dtype"] == "float16"


def test_rtx_pro_6000_takes_the_non_sm10_paths():
    dense, mla, moe = (_plan(m, "g7e.48xlarge") for m in ("llama-3.1-8b-instruct", "deepseek-v3", "gpt-oss-120b"))
    block = {p["model"]: next(d["formula"] for d in p["derivations"] if d["key"] == "block_size")
             for p in (dense, mla, moe)}
    assert "FLASH_ATTN (16)" in block[dense["model"]] and "TRITON_MLA" in block[mla["model"]]
    weights = next(d["formula"] for d in moe["derivations"] if d["key"] == "weights_bytes_per_gpu")
    assert "TRITON" in weights and "MARLIN" in weights


def test_no_catalog_type_is_refused_by_name():
    from vllm_eks.catalog.instances import unmodelled_reason
    assert [n for n in instance_catalog() if unmodelled_reason(n)] == []


def test_t4_dense_model_gets_triton_attn_without_a_flashinfer_workspace():
    """vLLM 0.32.0 raised FlashInfer's floor to SM 8.0 (flashinfer.py supports_compute_capability)
    and FLASH_ATTN needs 8.0: a non-MLA model on a T4 runs TRITON_ATTN, so the budget carries no
    FlashInfer workspace."""
    plan = _plan("llama-3.1-8b-instruct", "g4dn.12xlarge")
    block = next(d for d in plan["derivations"] if d["key"] == "block_size")
    assert plan["block_size"] == 16 and "vLLM selects TRITON_ATTN" in block["formula"]
    others = [d["formula"] for d in plan["derivations"] if d["key"] != "block_size"]
    assert others and not any("FlashInfer" in f or "FLASHINFER" in f for f in others)

"""The KV block size follows the attention backend vLLM 0.32 selects (generator/vllm_eks/model/attention.py),
per GPU generation, and one decision feeds both the KV sizing and `--block-size`."""

from __future__ import annotations

import math

import pytest

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import resolve_model
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.model import attention
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

# (instance, generation) with the GPU each catalog generation is sold in.
GENERATIONS = [("g5.48xlarge", "Ampere A10G"), ("p4de.24xlarge", "Ampere A100"), ("g6.48xlarge", "Ada L4"),
               ("g6e.48xlarge", "Ada L40S"), ("p5.48xlarge", "Hopper H100"), ("p5e.48xlarge", "Hopper H200"),
               ("p6-b200.48xlarge", "Blackwell B200")]
# DeepSeek-V3 (MLA): (instance, kv cache dtype) -> (block size, backend vLLM selects)
MLA_EXPECTED = {
    ("g5.48xlarge", "auto"): (16, "TRITON_MLA"), ("p4de.24xlarge", "auto"): (16, "TRITON_MLA"),
    ("g6.48xlarge", "auto"): (16, "TRITON_MLA"), ("g6e.48xlarge", "auto"): (16, "TRITON_MLA"),
    ("p5.48xlarge", "auto"): (16, "FLASH_ATTN_MLA"), ("p5e.48xlarge", "auto"): (16, "FLASH_ATTN_MLA"),
    ("p5.48xlarge", "fp8"): (64, "FLASHMLA"), ("p5e.48xlarge", "fp8"): (64, "FLASHMLA"),
    ("p4de.24xlarge", "fp8"): (16, "TRITON_MLA"),
    ("p6-b200.48xlarge", "auto"): (32, "FLASHINFER_MLA"), ("p6-b200.48xlarge", "fp8"): (32, "FLASHINFER_MLA"),
}


def _plan(**kw):
    return make_plan(PlanRequest(**kw))


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def _derivation(plan, key: str):
    (d,) = [d for d in plan.json_summary()["derivations"] if d["key"] == key]
    return d


@pytest.mark.parametrize(("instance", "kv"), list(MLA_EXPECTED), ids=[f"{i}-{k}" for i, k in MLA_EXPECTED])
def test_mla_block_size_per_generation(instance: str, kv: str) -> None:
    block, backend = MLA_EXPECTED[(instance, kv)]
    p = _plan(model="deepseek-v3", instance=instance, kv_cache_dtype=kv)
    s = p.json_summary()
    assert s["block_size"] == block
    assert _flag(s["engine_args"], "--block-size") == str(block)          # the flag vLLM receives
    assert s["engine_settings"]["block_size"] == block
    d = _derivation(p, "block_size")
    assert d["value"] == str(block) and backend in d["formula"] and "vllm/platforms/cuda.py" in d["source"]
    # the KV sizing counts whole blocks of that size: one full-length request holds ceil(len / block)
    per_request = math.ceil(s["max_model_len"] / block)
    assert s["max_concurrency"] == pytest.approx(s["kv_cache_blocks"] / per_request, rel=1e-3)


@pytest.mark.parametrize(("instance", "generation"), GENERATIONS, ids=[g for _, g in GENERATIONS])
def test_non_mla_models_keep_16(instance: str, generation: str) -> None:
    for kv in ("auto", "fp8"):
        s = _plan(model="llama-3.1-8b-instruct", instance=instance, kv_cache_dtype=kv).json_summary()
        assert s["block_size"] == 16 and _flag(s["engine_args"], "--block-size") == "16", (generation, kv)


def test_larger_block_holds_the_same_memory_in_fewer_blocks() -> None:
    """Same memory, same model: 64-token blocks on H100 with an FP8 KV cache hold what 16-token
    blocks hold, in a quarter of the blocks (within one block per rank of rounding)."""
    moved = _plan(model="deepseek-v3", instance="p5.48xlarge", kv_cache_dtype="fp8").json_summary()
    pinned = _plan(model="deepseek-v3", instance="p5.48xlarge", kv_cache_dtype="fp8", block_size=16).json_summary()
    assert moved["available_kv_cache_bytes_per_gpu"] == pinned["available_kv_cache_bytes_per_gpu"]
    assert abs(moved["kv_cache_blocks"] * 64 - pinned["kv_cache_blocks"] * 16) < 64


def test_ray_serve_engine_kwargs_carry_the_backend_block_size() -> None:
    p = _plan(model="deepseek-v3", instance="p6-b200.48xlarge", topology="ray-serve")
    assert p.engine.settings["block_size"] == 32


def test_pinned_block_size_that_rules_out_the_preferred_backend_says_so() -> None:
    p = _plan(model="deepseek-v3", instance="p6-b200.48xlarge", block_size=16)
    assert p.json_summary()["block_size"] == 16
    assert "falls back to TRITON_MLA" in _derivation(p, "block_size")["formula"]


@pytest.mark.parametrize(("model", "instance"), [("deepseek-v3", "p5.48xlarge"), ("llama-3.1-8b-instruct", "g6e.xlarge")])
def test_pinned_block_size_no_backend_takes_is_refused(model: str, instance: str) -> None:
    with pytest.raises(InvalidOptionError, match=r"^--block-size 8: no vLLM attention backend .* takes it"):
        _plan(model=model, instance=instance, block_size=8)


def test_unknown_gpu_generation_uses_vllms_default() -> None:
    p = _plan(model="deepseek-v3", gpu_memory_mib=200_000, gpus_per_node=8, hardware_name="p6-b300.48xlarge")
    assert p.json_summary()["block_size"] == 16
    assert "GPU generation unknown" in _derivation(p, "block_size")["formula"]


def test_cli_refusal_is_one_line(cli) -> None:
    r = cli("plan", "--model", "deepseek-v3", "--instance", "p5.48xlarge", "--block-size", "8")
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "--block-size 8" in r.stderr, r.stderr


# DeepSeek-V3.2 (sparse MLA + indexer): the sparse backend vLLM selects, always block 64 (the
# indexer's backend takes only 64 on CUDA)
SPARSE_EXPECTED = {
    ("p5.48xlarge", "auto"): "FLASH_ATTN_MLA_SPARSE", ("p5.48xlarge", "fp8"): "FLASHMLA_SPARSE",
    ("p6-b200.48xlarge", "auto"): "FLASHMLA_SPARSE", ("p6-b200.48xlarge", "fp8"): "FLASHINFER_MLA_SPARSE",
}


@pytest.mark.parametrize(("instance", "kv"), sorted(SPARSE_EXPECTED))
def test_sparse_mla_block_size_and_backend(instance, kv):
    hw = instance_catalog()[instance]
    rule = attention.block_size(resolve_model("deepseek-v3.2").architecture, hw.gpu, hw.compute_capability, kv, None)
    assert (rule.block_size, rule.backend) == (64, SPARSE_EXPECTED[(instance, kv)])
    with pytest.raises(InvalidOptionError, match="--block-size 32"):
        attention.block_size(resolve_model("deepseek-v3.2").architecture, hw.gpu, hw.compute_capability, kv, 32)


def test_sparse_mla_on_custom_hardware_takes_the_indexer_block_size():
    rule = attention.block_size(resolve_model("deepseek-v3.2").architecture, "custom", None, "auto", None)
    assert rule.block_size == 64 and rule.backend is None

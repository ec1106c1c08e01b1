"""Packed-format weights as vLLM 0.32 holds them after loading, per GPU generation
(generator/vllm_eks/model/packed.py). Every expected figure is written out by hand from the layout
rules, not taken from the code under test."""

from __future__ import annotations

import pytest

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog, resolve_model
from vllm_eks.core.units import GIB
from vllm_eks.model import weights
from vllm_eks.model.architecture import parse_config
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

GPT_OSS = resolve_model("gpt-oss-120b").architecture

# gpt-oss-120b, one GPU's non-expert weights (bf16): per layer q 2880x64x64, k and v 2 x 2880x8x64,
# o 64x64x2880, two norms 2x2880, q/k/v biases (64+16)x64, router 2880x128; plus the embedding
# and the LM head (201088 x 2880 each) and the final norm.
LAYERS = 36
NON_EXPERT_LAYER = 2 * (2880 * 4096 + 2 * 2880 * 512 + 4096 * 2880 + 2 * 2880 + 80 * 64 + 2880 * 128)
EMBEDDINGS = 2 * (2 * 201088 * 2880 + 2880)


def _layer_marlin(inter: int) -> int:
    """One MoE layer's 128 experts in the MARLIN layout: intermediate/rank to a multiple of 128,
    hidden 2880 -> 3072; 4-bit values, one byte per 32 values, bf16 biases."""
    i, h = -(-inter // 128) * 128, 3072
    return 128 * (3 * i * h // 2 + 3 * i * h // 32 + 2 * (2 * i + h))


def _layer_triton(inter: int) -> int:
    """The same in TRITON's Hopper layout: intermediate/rank to a multiple of 64, hidden as is;
    scale groups (hidden/32 = 90, inter/32) padded to 4, scale rows to 256; float32 biases."""
    i, h = -(-inter // 64) * 64, 2880
    scales = (-(-2 * i // 256) * 256) * 92 + 3072 * (-(-(i // 32) // 4) * 4)
    return 128 * (3 * i * h // 2 + scales + 4 * (2 * i + h))


def _loaded(instance: str, tp: int) -> int:
    cc = instance_catalog()[instance].compute_capability
    prec = weights.precision_for(GPT_OSS, 2, 4.25, "experts", cc, "mxfp4")
    return weights.stage_bytes(GPT_OSS, prec, tp, 1, 0)


def test_gpt_oss_120b_on_one_h100_is_sized_as_the_larger_of_triton_and_marlin():
    marlin = LAYERS * (NON_EXPERT_LAYER + _layer_marlin(2880)) + EMBEDDINGS
    triton = LAYERS * (NON_EXPERT_LAYER + _layer_triton(2880)) + EMBEDDINGS
    assert triton < marlin
    assert _loaded("p5.48xlarge", 1) == marlin
    # the plan for one H100 carries exactly that figure
    plan = make_plan(PlanRequest(model="gpt-oss-120b", instance="p5.48xlarge", tensor_parallel_size=1))
    assert plan.memory.weights_bytes_per_gpu == marlin
    # 65.90 GiB against "Model loading took 65.9651 GiB" (H100 on MARLIN, vllm-project/vllm#23278)
    assert abs(marlin / GIB - 65.9651) / 65.9651 < 0.005


@pytest.mark.parametrize(("instance", "tp", "inter"), [("g6e.12xlarge", 2, 1440), ("p4d.24xlarge", 2, 1440),
                                                      ("p4de.24xlarge", 1, 2880)])
def test_gpt_oss_120b_on_l40s_and_a100_uses_the_marlin_layout(instance, tp, inter):
    # column/row-parallel non-expert layers split by TP, k/v (8 heads) too; embeddings / TP
    non_expert = 2 * (2880 * 4096 + 2 * 2880 * 512 + 4096 * 2880) // tp + 2 * (2 * 2880 + 80 * 64 + 2880 * 128)
    expected = LAYERS * (non_expert + _layer_marlin(inter)) + 2 * 2 * 201088 * 2880 // tp + 2 * 2880
    assert _loaded(instance, tp) == expected


def test_gpt_oss_on_b200_uses_the_trtllm_layout_with_float32_biases():
    i, h = 2944, 3072
    experts = 128 * (3 * i * h // 2 + 3 * i * h // 32 + 4 * (2 * i + h))
    assert _loaded("p6-b200.48xlarge", 1) == LAYERS * (NON_EXPERT_LAYER + experts) + EMBEDDINGS


def test_unknown_gpu_takes_the_largest_mxfp4_layout():
    prec = weights.precision_for(GPT_OSS, 2, 4.25, "experts", None, "mxfp4")
    per_gpu = weights.stage_bytes(GPT_OSS, prec, 1, 1, 0)
    assert per_gpu == _loaded("p6-b200.48xlarge", 1) > _loaded("p5.48xlarge", 1)


def test_checkpoint_bytes_stay_the_stored_size_whatever_the_gpu():
    plans = [make_plan(PlanRequest(model="gpt-oss-120b", instance=i)) for i in ("p5.48xlarge", "p6-b200.48xlarge")]
    assert plans[0].memory.weights_bytes_total == plans[1].memory.weights_bytes_total
    assert plans[0].memory.weights_bytes_per_gpu > plans[0].memory.weights_bytes_total / plans[0].layout.tensor_parallel_size


AWQ = resolve_model("llama-3.1-70b-instruct-awq").architecture


def _awq_bytes(tp: int, bits_per_weight: float) -> int:
    """Llama 3.1 70B AWQ per GPU: every linear layer packed (q 8192x8192, k/v 2 x 8192x1024 with
    8 KV heads, o 8192x8192, gate/up/down 3 x 8192x28672) split by TP; fp16 norms, embedding and
    LM head (128256 x 8192) / TP, final norm."""
    linear = (8192 * 8192 + 2 * 8192 * 1024 + 8192 * 8192 + 3 * 8192 * 28672) / tp
    layer = linear * bits_per_weight / 8 + 2 * 2 * 8192
    return int(80 * layer + 2 * 2 * 128256 * 8192 / tp + 2 * 8192)


@pytest.mark.parametrize(("instance", "tp", "bits"), [
    # Marlin (SM 8.x): 4-bit values, an fp16 scale and a 4-bit zero point per group of 128
    ("p4de.24xlarge", 2, 4 + (16 + 4) / 128), ("g6e.12xlarge", 4, 4 + (16 + 4) / 128),
    # Machete (SM 9.0): the zero point becomes an fp16 -scale x zero per group
    ("p5.48xlarge", 2, 4 + (16 + 16) / 128)])
def test_awq_linear_layers_as_marlin_or_machete_hold_them(instance, tp, bits):
    cc = instance_catalog()[instance].compute_capability
    prec = weights.precision_for(AWQ, 2, AWQ.quantization.bits, "linear", cc, "awq")
    assert abs(weights.stage_bytes(AWQ, prec, tp, 1, 0) - _awq_bytes(tp, bits)) <= 1


def test_gptq_act_order_keeps_g_idx_and_repeats_row_parallel_scales_on_marlin():
    cfg = {**model_catalog()["llama-3.1-70b-instruct-awq"].config,
           "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True,
                                   "sym": True}}
    a = parse_config(cfg, "gptq")
    prec = weights.precision_for(a, 2, a.quantization.bits, "linear", (9, 0), "gptq")
    tp = 4
    # act-order rules Machete out: Marlin, 4 bits + fp16 scale per 128, no zero points (sym)
    base = _awq_bytes(tp, 4 + 16 / 128)
    # per layer: g_idx + sort indices, int32 per input row of qkv (8192), o (8192/4), gate_up
    # (8192), down (28672/4); o and down keep the scales of all 4 ranks' rows
    g_idx = 8 * (8192 + 2048 + 8192 + 7168)
    repeated = (2048 * 8192 + 7168 * 8192) * 3 / 128 * 2
    assert abs(weights.stage_bytes(a, prec, tp, 1, 0) - (base + 80 * (g_idx + repeated))) <= 1

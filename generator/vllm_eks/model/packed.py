"""Bytes of packed-format weights as vLLM 0.32 holds them after loading, per GPU generation.

A 4-bit checkpoint is not loaded byte for byte: vLLM picks a kernel by compute capability and
rewrites the weights into that kernel's layout, padding shapes to its tile sizes and converting
scales, zero points and biases. "Model loading took X GiB" (vllm/v1/worker/gpu_model_runner.py,
torch's allocated bytes after process_weights_after_loading) counts that layout.

MXFP4 MoE experts (gpt-oss; vllm/model_executor/layers/quantization/mxfp4.py
GptOssMxfp4MoEMethod, backends chosen in vllm/model_executor/layers/fused_moe/oracle/mxfp4.py
select_mxfp4_moe_backend from _get_priority_backends_for_gpt_oss):
- SM 10.x: FLASHINFER_TRTLLM_MXFP4_BF16 (its experts class runs only on the SM 10.x family).
- SM 9.0: TRITON, OpenAI's triton_kernels (gpt_oss_triton_kernels_moe.py runs it on SM 9.0 to
  12.x; the TRTLLM backends need SM 10.x).
- SM 8.x and 12.x: MARLIN (marlin_moe.py: SM >= 7.5; on 12.x the selector orders TRITON after it).
(SM 9.0 is sized as the larger of TRITON and MARLIN: see mxfp4_layouts.) Each rounds the hidden
size and the per-rank intermediate size up to its tile
(mxfp4_round_up_hidden_size_and_intermediate_size): MARLIN and TRTLLM intermediate to 128 and
hidden to 256, TRITON on CUDA intermediate to 64 and hidden unchanged. Weights are 4-bit (two
values a byte) with one 1-byte E8M0 scale per 32 values; gpt-oss experts carry biases (bf16 in
the checkpoint; MARLIN keeps bf16, marlin_utils_fp4.py prepare_moe_mxfp4_layer_for_marlin; TRITON
and TRTLLM convert them to float32, convert_gpt_oss_weight_to_mxfp4_moe_kernel_format). TRITON on
Hopper also pads the scale groups to a multiple of 4 (mxfp4_utils.py _swizzle_mxfp4) and the
scale rows to 256 (triton_kernels HopperMXScaleLayout: 2 x num_warps 8 x 2 x 8). The values'
Hopper swizzle of triton_kernels v3.5.1 (vLLM's pinned tag, cmake/external_projects/
triton_kernels.cmake) pads to 16 and 32, which the rounded gpt-oss shapes already are.

AWQ and GPTQ linear layers (vllm/model_executor/kernels/linear/__init__.py choose_mp_linear_kernel,
order CutlassW4A8, Machete, Marlin, ...): on SM 9.0 Machete (machete.py) takes 4- and 8-bit
weights with groups of 64, 128 or per channel, without act-order; it keeps the packed values and
fp16 scales and turns each zero point into an fp16 `-scale x zero`. Elsewhere (SM >= 7.5) Marlin
(marlin.py) keeps packed values, fp16 scales and zero points packed at the weight's bit width;
with GPTQ act-order it keeps g_idx and its sort order (two int32 per input row) and repeats the
scales of row-parallel layers on every rank (marlin_utils.marlin_repeat_scales_on_all_ranks)."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_eks.model.architecture import Architecture, Quantization

MXFP4_BLOCK = 32   # values per E8M0 scale (OCP MX)


def round_up(x: int, to: int) -> int:
    return -(-x // to) * to


@dataclass(frozen=True)
class Mxfp4Layout:
    backend: str
    intermediate_align: int
    hidden_align: int
    bias_bytes: int           # bytes per expert-bias element after conversion
    hopper_scale_swizzle: bool

    def describe(self) -> str:
        hidden = f"hidden to {self.hidden_align}" if self.hidden_align > 1 else "hidden as is"
        return (f"{self.backend}: intermediate/rank rounded to {self.intermediate_align}, {hidden}, "
                f"bias {'fp32' if self.bias_bytes == 4 else 'bf16'}"
                + (", scales padded (groups to 4, rows to 256)" if self.hopper_scale_swizzle else ""))


MARLIN = Mxfp4Layout("MARLIN", 128, 256, 2, False)
TRITON = Mxfp4Layout("TRITON", 64, 1, 4, True)
TRTLLM = Mxfp4Layout("FLASHINFER_TRTLLM_MXFP4_BF16", 128, 256, 4, False)


def mxfp4_layouts(compute_capability: tuple[int, int] | None) -> tuple[Mxfp4Layout, ...]:
    """The MXFP4 MoE backend vLLM 0.32 picks for gpt-oss on this GPU, and the ones it may fall
    back to; a layer is sized with the largest. SM 9.0: TRITON needs triton_kernels importable
    (the CUDA build bundles it under vllm/third_party); without it vLLM goes on down its list:
    FLASHINFER_CUTLASS_MXFP4_BF16 (with FlashInfer; padded to 128 both ways, bf16 biases), HUMMING
    (with the humming package, moved ahead of MARLIN on SM 9.0; pads to 256 x 128) and MARLIN,
    whose 128 x 256 padding is the largest of them. No public H100 log with the TRITON backend was
    found to tell which the image runs, so Hopper is sized with TRITON and MARLIN, the larger
    counting (err on the side of less KV cache). Unknown GPU: all three layouts."""
    if compute_capability is None:
        return (MARLIN, TRITON, TRTLLM)
    if compute_capability[0] == 10:
        return (TRTLLM,)
    if compute_capability == (9, 0):
        return (TRITON, MARLIN)
    if compute_capability[0] == 12:
        # RTX PRO Blackwell (SM 12.0): the triton_kernels experts run there too
        # (gpt_oss_triton_kernels_moe.py _supports_current_device: SM 9.0 to 12.x), MARLIN without
        # them; no public log says which the image runs, so size both, the larger counting.
        return (TRITON, MARLIN)
    return (MARLIN,)


def mxfp4_expert_bytes(a: Architecture, tp: int, layout: Mxfp4Layout) -> int:
    """Bytes of one MoE layer's routed experts on one TP rank, as the backend holds them."""
    moe = a.moe
    assert moe is not None
    e = moe.num_experts
    inter = round_up(moe.expert_intermediate_size // tp, layout.intermediate_align)
    hidden = round_up(a.hidden_size, layout.hidden_align)
    # w13: (E, 2 x inter, hidden / 2), w2: (E, hidden, inter / 2), uint8 pairs of 4-bit values
    values = e * (2 * inter * hidden + hidden * inter) // 2
    if layout.hopper_scale_swizzle:
        scales = e * (round_up(2 * inter, 256) * round_up(hidden // MXFP4_BLOCK, 4)
                      + round_up(hidden, 256) * round_up(inter // MXFP4_BLOCK, 4))
    else:
        scales = e * (2 * inter * hidden + hidden * inter) // MXFP4_BLOCK
    # vllm/model_executor/models/gpt_oss.py builds its experts with has_bias=True
    bias = e * (2 * inter + hidden) * layout.bias_bytes if a.model_type == "gpt_oss" else 0
    return values + scales + bias


@dataclass(frozen=True)
class LinearPacking:
    kernel: str
    bits: float               # bits per weight: values, scales, zero points
    act_order: bool           # g_idx + sort indices per input row; row-parallel scales repeated

    def describe(self) -> str:
        return f"{self.kernel}: {self.bits:.4g} bits/weight" + (", act-order g_idx" if self.act_order else "")


def _machete_takes(q: Quantization) -> bool:
    # machete_utils.py: uint4/uint8 (with zero points) or uint4b8/uint8b128; groups -1, 64, 128
    return q.weight_bits in (4, 8) and q.group_size in (-1, 64, 128) and not q.act_order


def linear_packing(q: Quantization, compute_capability: tuple[int, int] | None) -> LinearPacking:
    """Bits per weight of an AWQ/GPTQ linear layer as loaded. Unknown GPU: the larger of the
    Machete and Marlin layouts."""
    per_group = 1 / q.group_size if q.group_size > 0 else 0.0
    machete = compute_capability == (9, 0) or (compute_capability is None and q.zero_point)
    if machete and _machete_takes(q):
        return LinearPacking("Machete", q.weight_bits + (16 + (16 if q.zero_point else 0)) * per_group, False)
    zero = q.weight_bits if q.zero_point else 0
    return LinearPacking("Marlin", q.weight_bits + (16 + zero) * per_group, q.act_order)


def act_order_bytes(a: Architecture, tp: int, q: Quantization) -> float:
    """Marlin's extra bytes per decoder layer on one rank for GPTQ act-order: g_idx and its sort
    indices (int32) per input row of each linear layer (fused qkv and gate_up count once), and
    the fp16 scales of the row-parallel layers (o_proj, down_proj) kept for the full input size."""
    h = a.hidden_size
    o_in = a.num_attention_heads * a.head_dim // tp
    down_in = (a.moe.dense_intermediate_size if a.moe else a.intermediate_size) // tp
    g_idx = 2 * 4 * (h + o_in + h + down_in)
    if q.group_size <= 0 or tp == 1:
        return g_idx
    repeated = (o_in * h + down_in * h) * (tp - 1) / q.group_size * 2
    return g_idx + repeated

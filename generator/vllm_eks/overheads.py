"""Memory a vLLM GPU worker uses besides weights and KV cache, as estimated before start-up.

vLLM measures these in a profiling run (vllm/v1/worker/gpu_worker.py determine_available_memory):
the torch activation peak of one forward pass over `max_num_batched_tokens` dummy tokens plus a
sampler pass over `max_num_seqs` sequences, the memory that grew outside torch (NCCL, cuBLAS
workspaces, custom all-reduce buffers), and CUDA-graph memory. We cannot run the profile before
the pod exists, so we estimate each term with the formulas below; docs/memory-model.md lists
the public vLLM logs they were checked against."""

from __future__ import annotations

from dataclasses import dataclass

from .architecture import Architecture

from .units import GIB, MIB

# Bytes that grow outside torch on one worker: cuBLAS/cuDNN workspaces and the CUDA context's
# allocations after start-up, plus NCCL and custom all-reduce buffers when ranks talk.
NON_TORCH_BASE = 128 * MIB
NON_TORCH_COLLECTIVES = 256 * MIB
# CUDA graphs: a fixed pool plus a share per captured layer (all capture sizes replay into one pool).
CUDAGRAPH_BASE = 512 * MIB
CUDAGRAPH_PER_LAYER = 4 * MIB
# The dummy sampler pass keeps fp32 logits over the whole (gathered) vocabulary for every
# sequence, and about as many copies again for softmax, top-k/top-p sorting and logprobs.
SAMPLER_FP32_COPIES = 5


@dataclass(frozen=True)
class Overheads:
    activation_peak: int
    activation_formula: str
    non_torch: int
    non_torch_formula: str
    cudagraph: int
    cudagraph_formula: str

    @property
    def total(self) -> int:
        """Bytes vLLM needs on the GPU besides weights and KV cache."""
        return self.activation_peak + self.non_torch + self.cudagraph


def activation_width(a: Architecture, tp: int) -> int:
    """Elements per token alive at the peak of one decoder layer on one rank: the residual stream
    and normed input (3h), the attention projections (q, k, v and the attention output), and the
    MLP (gate and up outputs plus the activation), for MoE the routed experts of each token."""
    h = a.hidden_size
    if a.mla is not None:
        m = a.mla
        attn = a.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) // tp
        attn += m.kv_lora_rank + m.qk_rope_head_dim
    else:
        kv = max(1, a.num_kv_heads // tp)
        attn = (2 * a.num_attention_heads // tp + 2 * kv) * a.head_dim
    if a.moe is not None:
        # fused-MoE intermediate caches: per routed copy of a token, gate/up output and the
        # expert output before the weighted sum
        k = a.moe.experts_per_token
        mlp = k * (3 * a.moe.expert_intermediate_size // tp + h) + a.moe.num_experts
    else:
        mlp = 3 * a.intermediate_size // tp
    return 3 * h + attn + mlp


def estimate(a: Architecture, tp: int, pp: int, layers_on_rank: int, max_num_batched_tokens: int,
             max_num_seqs: int, act_dtype_bytes: int) -> Overheads:
    width = activation_width(a, tp)
    forward = max_num_batched_tokens * width * act_dtype_bytes
    # logits are gathered to the full vocabulary on every rank before sampling
    sampler = max_num_seqs * a.vocab_size * 4 * SAMPLER_FP32_COPIES
    act = forward + sampler
    act_f = (f"{max_num_batched_tokens} tokens x {width} elements x {act_dtype_bytes} B "
             f"+ sampler {max_num_seqs} seqs x {a.vocab_size} vocab x 4 B x {SAMPLER_FP32_COPIES}")
    talks = tp > 1 or pp > 1
    non_torch = NON_TORCH_BASE + (NON_TORCH_COLLECTIVES if talks else 0)
    nt_f = f"{NON_TORCH_BASE // MIB} MiB base" + (f" + {NON_TORCH_COLLECTIVES // MIB} MiB NCCL/all-reduce buffers" if talks else "")
    graphs = CUDAGRAPH_BASE + CUDAGRAPH_PER_LAYER * layers_on_rank
    g_f = f"{CUDAGRAPH_BASE // MIB} MiB + {layers_on_rank} layers x {CUDAGRAPH_PER_LAYER // MIB} MiB"
    return Overheads(act, act_f, non_torch, nt_f, graphs, g_f)

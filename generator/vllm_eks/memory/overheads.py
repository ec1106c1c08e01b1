"""Memory a vLLM GPU worker uses besides weights and KV cache, as estimated before start-up.

vLLM 0.32 measures these in `determine_available_memory` (vllm/v1/worker/gpu_worker.py):
`profile_run` (a forward pass over `max_num_batched_tokens` dummy tokens, then the sampler over
`min(max_num_seqs, max_num_batched_tokens)` sequences), the memory the process consumed outside
torch since its start-up snapshot (cuBLAS workspaces, NCCL and custom all-reduce buffers), and
`profile_cudagraph_memory` (vllm/v1/worker/gpu_model_runner.py), which captures the largest and
second-largest graph of each CUDA-graph mode and extrapolates. Since v0.21 that CUDA-graph
estimate is subtracted from the KV budget by default (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`
defaults to 1 in vllm/envs.py). We cannot run the profile before the pod exists, so each term is a
formula of the model config and the engine settings; where the public logs leave a constant open
(docs/calibration-logs.md) the plan takes the end of its range that leaves less KV cache, and
`Overheads.expected` / `Overheads.optimistic` carry the rest of the band for `explain`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from vllm_eks.core.units import MIB
from vllm_eks.model.architecture import Architecture

# Bytes that grow outside torch on one worker after vLLM's start-up snapshot: cuBLAS/cuDNN
# workspaces and the CUDA context's later allocations, plus, when ranks talk, what the collectives
# allocate on first use (NCCL channels and buffers; the custom and symmetric-memory all-reduce
# buffers themselves exist before the snapshot). Logged: 0.06-0.14 GiB at TP=1; 0.21 GiB at TP=4
# over PCIe (L40S, log A); 0.54-0.55 GiB at TP=2 over NVLink (H100, logs K4 and K5), where NCCL
# and vLLM use the NVLink paths. So 256 MiB more over PCIe and 448 MiB more over NVLink/NVSwitch.
NON_TORCH_BASE = 128 * MIB
NON_TORCH_COLLECTIVES = 256 * MIB
NON_TORCH_COLLECTIVES_NVLINK = 448 * MIB
# FlashInfer attention (vLLM's first choice for standard attention on SM 10.x, B200) allocates a
# workspace on its first forward pass, after the start-up snapshot: VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE
# (394 MiB, vllm/envs.py), or more when max_num_batched_tokens x query heads x head_dim x 16 B is
# larger (`_get_workspace_buffer`, vllm/v1/attention/backends/flashinfer.py), and on SM 10.x a
# second buffer of the same default size for the TRT-LLM kernels (`_get_trtllm_workspace_buffer`).
# FlashAttention (Ampere, Ada, Hopper) keeps no such workspace.
FLASHINFER_WORKSPACE = 394 * MIB
FLASHINFER_PREFILL_BYTES_PER_ELEM = 16
# Fused MoE layers take their buffers from vLLM's workspace manager (`_allocate_buffers` in
# vllm/model_executor/layers/fused_moe/modular_kernel.py, `get_simultaneous` in
# vllm/v1/worker/workspace.py), which keeps the largest size it was asked for: after the profile
# run, a workspace for all max_num_batched_tokens tokens stays allocated beside the weights. With
# the Triton experts' shapes (experts/triton_moe.py `workspace_shapes`): max(M x topk x max(N/2, K),
# M x K) + M x topk x max(N, K) elements of the activation dtype, M the batched tokens, N the
# gate/up width per rank (2 x expert intermediate / TP) and K the hidden size.
# The dummy sampler pass (gpu_model_runner.py `_dummy_sampler_run`) holds the logits of every
# sequence over the whole gathered vocabulary in fp32 and, while it samples, the temperature-scaled
# copy, the top-k/top-p sort (values and int64 indices), the probabilities and their cumulative
# sum: about ten fp32 copies at its peak. The public H100 logs at 1024 sequences (calibration-logs.md,
# the llm-d rows) show 9.6-9.9 copies for four vocabularies (128k-201k); the 16 GiB card at 256
# sequences (log B) 7.2. The plan takes 10.
SAMPLER_FP32_COPIES = {"plan": 10.0, "expected": 9.7, "optimistic": 7.2}
# CUDA graphs: every captured graph keeps, per decoder layer, its kernel nodes and the small
# buffers they point at (piecewise graphs are split at each attention layer, full graphs hold
# every layer). vLLM's estimate is the largest capture plus the second capture's increase times
# the remaining graphs. Per layer and graph the public logs show 0.2-0.45 MiB (calibration-logs.md
# section 3): the plan takes 0.5 MiB (less KV), `expected` 0.3 MiB, `optimistic` 0.2 MiB.
GRAPH_PER_LAYER = {"plan": MIB // 2, "expected": 3 * MIB // 10, "optimistic": MIB // 5}
# The forward-pass width formula matched the logged activation peaks within 3 % (B, E); a
# torch.compile'd graph on another GPU generation may keep a few more buffers alive, so the
# plan adds 15 % and the optimistic end takes 10 % less.
ACTIVATION_FACTOR = {"plan": 1.15, "expected": 1.0, "optimistic": 0.9}
# vLLM's default largest capture size (config/vllm.py `_set_cudagraph_sizes`: 512, 1024 only on
# data-centre Blackwell) and the shape of the list below it.
DEFAULT_MAX_CAPTURE = 512
DEFAULT_MAX_CAPTURE_BLACKWELL = 1024


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, max_capture: int = DEFAULT_MAX_CAPTURE,
                  with_max_num_seqs: bool = True) -> list[int]:
    """vLLM's default `cudagraph_capture_sizes` for one-token decode: 1, 2, 4, multiples of 8
    below 256, multiples of 16 from 256, up to min(2 x max_num_seqs, max_capture,
    max_num_batched_tokens), plus max_num_batched_tokens when it fits, and (0.32, not 0.26:
    spec/engine_versions.py) max_num_seqs when it fits."""
    top = min(max_num_seqs * 2, max_capture, max_num_batched_tokens)
    sizes = {s for s in (1, 2, 4) if s <= top}
    sizes |= set(range(8, min(top + 1, 256), 8))
    sizes |= set(range(256, top + 1, 16))
    sizes |= {s for s in (max_num_batched_tokens, max_num_seqs if with_max_num_seqs else 0) if 0 < s <= top}
    return sorted(sizes)


def graph_counts(max_num_seqs: int, max_num_batched_tokens: int,
                 max_capture: int = DEFAULT_MAX_CAPTURE, with_max_num_seqs: bool = True) -> tuple[int, int]:
    """(piecewise graphs, full graphs) under vLLM 0.32's default FULL_AND_PIECEWISE mode:
    a piecewise graph for every capture size, a full graph for every uniform-decode batch
    (capture sizes up to max_num_seqs)."""
    piecewise, full, _ = _graph_shape(max_num_seqs, max_num_batched_tokens, max_capture, with_max_num_seqs)
    return piecewise, full


@lru_cache(maxsize=4096)
def _graph_shape(max_num_seqs: int, max_num_batched_tokens: int, max_capture: int,
                 with_max_num_seqs: bool = True) -> tuple[int, int, int]:
    """(piecewise graphs, full graphs, largest capture size): what the estimate needs of the
    capture list. A pure function of three integers, asked for again and again while a plan
    settles max_num_seqs, so it is kept (a few thousand small tuples at most)."""
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, max_capture, with_max_num_seqs)
    return len(sizes), len([s for s in sizes if s <= max_num_seqs]), sizes[-1]


@dataclass(frozen=True)
class Overheads:
    activation_peak: int
    activation_formula: str
    non_torch: int
    non_torch_formula: str
    cudagraph: int
    cudagraph_formula: str
    # The same total with the expected and the optimistic constants (the uncertainty band), and
    # the CUDA-graph part of each.
    expected: int = 0
    optimistic: int = 0
    expected_graphs: int = 0
    optimistic_graphs: int = 0

    @property
    def total(self) -> int:
        """Bytes vLLM needs on the GPU besides weights and KV cache (the plan's, cautious figure)."""
        return self.activation_peak + self.non_torch + self.cudagraph

    def without_graphs(self) -> Overheads:
        """For an engine that does not subtract its CUDA-graph estimate (vLLM before 0.21, or
        VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0): the graphs come out of the headroom instead."""
        return Overheads(self.activation_peak, self.activation_formula, self.non_torch, self.non_torch_formula,
                         0, "not subtracted by this engine (taken from the headroom)",
                         self.expected - self.expected_graphs, self.optimistic - self.optimistic_graphs)


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


def attention_workspace(a: Architecture, tp: int, backend: str | None, max_num_batched_tokens: int,
                        blackwell: bool) -> tuple[int, str]:
    """The attention backend's persistent workspace on one rank, and its formula text."""
    if backend != "FLASHINFER":
        return 0, ""
    prefill = max_num_batched_tokens * (a.num_attention_heads // tp) * a.head_dim * FLASHINFER_PREFILL_BYTES_PER_ELEM
    main = max(FLASHINFER_WORKSPACE, prefill)
    # the TRT-LLM buffer exists on data-centre Blackwell (SM 10.x)
    trtllm = FLASHINFER_WORKSPACE if blackwell else 0
    return main + trtllm, (f" + FlashInfer workspace {main // MIB} MiB" + (f" + TRT-LLM workspace {trtllm // MIB} MiB"
                                                                         if trtllm else ""))


def moe_workspace(a: Architecture, tp: int, max_num_batched_tokens: int, act_dtype_bytes: int) -> tuple[int, str]:
    """The fused-MoE workspace that stays allocated on one rank, and its formula text."""
    if a.moe is None:
        return 0, ""
    m, k, h = max_num_batched_tokens, a.moe.experts_per_token, a.hidden_size
    n = 2 * a.moe.expert_intermediate_size // tp
    elems = max(m * k * max(n // 2, h), m * h) + m * k * max(n, h)
    return elems * act_dtype_bytes, f" + fused-MoE workspace {elems * act_dtype_bytes // MIB} MiB"


def _graphs(width: int, dtype_bytes: int, layers: int, graphs: int, largest: int, per_layer: int) -> int:
    # the first (largest) capture allocates that batch's activations in the graph pool; every
    # further graph adds its per-layer nodes
    return largest * width * dtype_bytes + max(0, graphs - 1) * layers * per_layer


def estimate(a: Architecture, tp: int, pp: int, layers_on_rank: int, max_num_batched_tokens: int,
             max_num_seqs: int, act_dtype_bytes: int, max_capture: int = DEFAULT_MAX_CAPTURE,
             nvlink: bool = False, backend: str | None = None, blackwell: bool | None = None,
             with_max_num_seqs: bool = True) -> Overheads:
    """The overheads of one rank. `max_capture` and `with_max_num_seqs` are the capture rules of
    the vLLM release sized (spec/engine_versions.py); `blackwell` (default: a 1024 ceiling) says
    whether the GPU is SM 10.x, for FlashInfer's TRT-LLM workspace."""
    if blackwell is None:
        blackwell = max_capture == DEFAULT_MAX_CAPTURE_BLACKWELL
    width = activation_width(a, tp)
    forward = max_num_batched_tokens * width * act_dtype_bytes
    # the profile's sampler runs over min(max_num_seqs, max_num_batched_tokens) requests; logits
    # are gathered to the full vocabulary on every rank before sampling
    reqs = min(max_num_seqs, max_num_batched_tokens)
    sampler = reqs * a.vocab_size * 4

    # the forward pass has released its activations (all but the last hidden states) before the
    # sampler runs: the profile's peak is the larger of the two, not their sum
    def act(scenario: str) -> int:
        return max(int(forward * ACTIVATION_FACTOR[scenario]), int(sampler * SAMPLER_FP32_COPIES[scenario]))

    act_f = (f"max(forward {max_num_batched_tokens} tokens x {width} elements x {act_dtype_bytes} B x "
             f"{ACTIVATION_FACTOR['plan']}, sampler {reqs} seqs x {a.vocab_size} vocab x 4 B x "
             f"{SAMPLER_FP32_COPIES['plan']:g} fp32 copies)")
    talks = tp > 1 or pp > 1
    collectives = (NON_TORCH_COLLECTIVES_NVLINK if nvlink else NON_TORCH_COLLECTIVES) if talks else 0

    workspace, ws_f = attention_workspace(a, tp, backend, max_num_batched_tokens, blackwell)
    moe, moe_f = moe_workspace(a, tp, max_num_batched_tokens, act_dtype_bytes)
    workspace, ws_f = workspace + moe, ws_f + moe_f

    def nt(scenario: str) -> int:
        return NON_TORCH_BASE + collectives + workspace

    non_torch = nt("plan")
    link = "NVLink" if nvlink else "PCIe"
    nt_f = f"{NON_TORCH_BASE // MIB} MiB base" + (
        f" + {collectives // MIB} MiB NCCL/all-reduce buffers ({link})" if talks else "") + ws_f
    piecewise, full, largest = _graph_shape(max_num_seqs, max_num_batched_tokens, max_capture, with_max_num_seqs)
    graphs = piecewise + full

    def cg(scenario: str) -> int:
        return _graphs(width, act_dtype_bytes, layers_on_rank, graphs, largest, GRAPH_PER_LAYER[scenario])

    g_f = (f"largest capture {largest} tokens x {width} elements x {act_dtype_bytes} B + ({piecewise} piecewise + "
           f"{full} full graphs - 1) x {layers_on_rank} layers x {GRAPH_PER_LAYER['plan'] / MIB:g} MiB")
    return Overheads(act("plan"), act_f, non_torch, nt_f, cg("plan"), g_f,
                     expected=act("expected") + nt("expected") + cg("expected"),
                     optimistic=act("optimistic") + nt("optimistic") + cg("optimistic"),
                     expected_graphs=cg("expected"), optimistic_graphs=cg("optimistic"))

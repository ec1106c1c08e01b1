"""KV cache arithmetic, mirroring vLLM's v1 KV cache manager.

Per layer and token a standard attention layer stores K and V for the KV heads on this rank;
an MLA layer stores one latent vector (kv_lora_rank + qk_rope_head_dim), replicated on every
tensor-parallel rank. Memory is cut into blocks of `block_size` tokens. Layers of different
attention kinds (full vs sliding window) form KV cache groups that share one pool of blocks
(vllm/v1/core/kv_cache_utils.py): the pool holds `available // (page_size * group_size)`
blocks, where group_size is the number of layers in a group.

Llama 4's chunked local attention layers form groups of their own (ChunkedLocalAttentionSpec,
vllm/v1/kv_cache_interface.py): vLLM 0.32 keeps the hybrid allocator on for them on GPUs
(VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to 1, vllm/envs.py; vllm/config/
vllm.py turns the allocator off only when that is 0, with EAGLE speculative decoding, or on a
platform without hybrid KV cache support; the CPU build has it, vllm/platforms/cpu.py
support_hybrid_kv_cache, and the engine tier's chunked-attention case logs the grouped figures).

The recurrent-state layers of a hybrid (Gated DeltaNet, Mamba2: hybrid.py) form groups of
their own too (MambaSpec): each layer's state is padded to one attention page, so a state group
costs one block per state a request holds, whatever its length."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from vllm_eks.model.architecture import Architecture
from vllm_eks.model.hybrid import aligned_block_size


@dataclass(frozen=True, order=True)
class Chunk:
    """The kind of a chunked local attention group: attention within chunks of `size` tokens."""

    size: int

    def __str__(self) -> str:
        return f"chunk {self.size}"


@dataclass(frozen=True, order=True)
class State:
    """The kind of a recurrent-state group: `blocks` state blocks per request (MambaSpec in
    mamba_cache_mode "align": hybrid.StateLayers.blocks_per_request)."""

    blocks: int

    def __str__(self) -> str:
        return f"state ({self.blocks} blocks per request)"


# a KV cache group's kind: None for full attention, an int for a sliding window, a Chunk for
# chunked local attention, a State for recurrent-state layers
Kind = int | Chunk | State | None


def describe(kind: Kind) -> str:
    return "full" if kind is None else (str(kind) if isinstance(kind, (Chunk, State)) else f"window {kind}")


@dataclass(frozen=True)
class KVLayout:
    bytes_per_token_per_layer: int
    # layer count per KV cache group and the group's kind (None = full attention, int = sliding
    # window, Chunk = chunked local attention)
    groups: tuple[tuple[int, Kind], ...]
    group_size: int           # layers per group (groups are padded to this many)
    layers_on_rank: int
    state_layers: int = 0     # recurrent-state layers among layers_on_rank
    state_bytes_per_layer: int = 0   # one sequence's state in one such layer on this rank, unpadded

    @property
    def bytes_per_token(self) -> int:
        """KV bytes one token costs on this rank if every attention layer kept it (full-attention
        view); recurrent-state layers keep no per-token cache."""
        return self.bytes_per_token_per_layer * (self.layers_on_rank - self.state_layers)

    @property
    def state_bytes_per_sequence(self) -> int:
        """One sequence's live recurrent state on this rank, all state layers, unpadded."""
        return self.state_bytes_per_layer * self.state_layers

    @property
    def page_bytes(self) -> int:
        return self.bytes_per_token_per_layer  # per token; times block_size for one layer's block


def kv_heads_per_rank(a: Architecture, tp: int) -> int:
    # fewer KV heads than ranks: vLLM replicates each head so every rank holds one
    return max(1, a.num_kv_heads // tp)


# DeepSeek-V3.2's FP8 MLA cache row, "fp8_ds_mla" (vllm/model_executor/layers/attention/
# mla_attention.py get_kv_cache_spec, layout in vllm/v1/attention/backends/mla/flashmla_sparse.py):
# 512 fp8 latent values, 4 float32 scales (one per 128), 64 bf16 rotary values
FP8_DS_MLA_BYTES = 512 + 4 * 4 + 64 * 2
INDEXER_QUANT_BLOCK = 128   # DeepseekV32Indexer.quant_block_size: one float32 scale per 128 keys


def indexer_bytes_per_token(a: Architecture) -> int:
    """DeepSeek-V3.2's indexer key cache per token per layer: fp8 keys of index_head_dim plus a
    float32 scale per 128 (DeepseekV32IndexerCache, an MLAAttentionSpec of uint8,
    vllm/model_executor/models/deepseek_v2.py), not split by TP."""
    if a.mla is None or not a.mla.sparse:
        return 0
    return a.mla.index_head_dim + a.mla.index_head_dim // INDEXER_QUANT_BLOCK * 4


def bytes_per_token_per_layer(a: Architecture, tp: int, kv_dtype_bytes: int) -> int:
    if a.mla is not None:
        # the indexer caches share the MLA layers' block size and full-attention kind, so vLLM
        # puts both in one KV cache group whose page is the sum of the layers' pages
        # (UniformTypeKVCacheSpecs, vllm/v1/kv_cache_interface.py): per token and layer, one
        # latent row plus one indexer key
        if a.mla.sparse and kv_dtype_bytes == 1:
            return FP8_DS_MLA_BYTES + indexer_bytes_per_token(a)
        return (a.mla.kv_lora_rank + a.mla.qk_rope_head_dim) * kv_dtype_bytes + indexer_bytes_per_token(a)
    return 2 * kv_heads_per_rank(a, tp) * a.head_dim * kv_dtype_bytes


def attention_block_size(a: Architecture, tp: int, kv_dtype_bytes: int, state_dtype_bytes: int, block: int) -> int:
    """The block size vLLM runs a hybrid with at this TP: `block` raised until one attention
    page holds one layer's state (hybrid.aligned_block_size); `block` for other models."""
    if a.state is None:
        return block
    return aligned_block_size(block, bytes_per_token_per_layer(a, tp, kv_dtype_bytes),
                              a.state.state_bytes(tp, state_dtype_bytes))


@lru_cache(maxsize=4096)
def layout(a: Architecture, tp: int, layers: range, kv_dtype_bytes: int, state_dtype_bytes: int = 2) -> KVLayout:
    windows: list[Kind] = [a.layer_windows[i] if a.layer_windows else None for i in layers]
    if a.layer_chunks:
        chunks = [a.layer_chunks[i] for i in layers]
        windows = [Chunk(c) if c is not None else w for c, w in zip(chunks, windows, strict=True)]
    state_layers, state_bytes = 0, 0
    if a.state is not None:
        kind = State(a.state.blocks_per_request)
        windows = [kind if a.state.layers[i] else w for i, w in zip(layers, windows, strict=True)]
        state_layers = sum(a.state.layers[i] for i in layers)
        state_bytes = a.state.state_bytes(tp, state_dtype_bytes)
    by_kind: dict[Kind, int] = {}
    for w in windows:
        by_kind[w] = by_kind.get(w, 0) + 1
    groups: tuple[tuple[int, Kind], ...]
    if len(by_kind) == 1:
        (w, n), = by_kind.items()
        groups = ((n, w),)
        group_size = n
    else:
        # vllm kv_cache_utils._get_kv_cache_groups_uniform_page_size (0.32): group size is the
        # smallest layer count of a kind, or the largest when it is below 1.5 x the smallest
        smallest, largest = min(by_kind.values()), max(by_kind.values())
        group_size = largest if largest < smallest * 1.5 else smallest
        grouped = []
        for w, n in sorted(by_kind.items(), key=lambda kv: _order(kv[0])):
            full, rest = divmod(n, group_size)
            grouped += [(group_size, w)] * full + ([(rest, w)] if rest else [])
        groups = tuple(grouped)
    return KVLayout(bytes_per_token_per_layer(a, tp, kv_dtype_bytes), groups, group_size, len(windows),
                    state_layers, state_bytes)


def _order(kind: Kind) -> tuple[int, int]:
    if kind is None:
        return (0, 0)
    if isinstance(kind, State):
        return (3, kind.blocks)
    return (2, kind.size) if isinstance(kind, Chunk) else (1, kind)


@dataclass(frozen=True)
class KVCapacity:
    num_blocks: int
    slots: int                  # token slots of one group: num_blocks / groups x block_size
    tokens: int                 # as vLLM logs "KV cache size: N tokens" (int(concurrency x L))
    blocks_per_request: int     # blocks one request of max_model_len needs across all groups
    max_concurrency: float      # as vLLM logs "Maximum concurrency for L tokens per request"


def in_flight_tokens(max_num_batched_tokens: int, pp: int, async_scheduling: bool = True) -> int:
    """vLLM's VllmConfig.max_in_flight_tokens: every concurrent batch may hold a full step.
    Concurrent batches: 2 with async scheduling (vLLM's default at PP=1 on GPUs), PP stages
    otherwise (the V1 model runner turns async scheduling off with pipeline parallelism, and
    vLLM's CPU platform turns it off always)."""
    return max_num_batched_tokens * (2 if pp == 1 and async_scheduling else pp)


def blocks_for_request(group_window: Kind, max_model_len: int, block_size: int,
                       in_flight: int) -> int:
    if group_window is None:
        return math.ceil(max_model_len / block_size)
    if isinstance(group_window, State):
        # MambaSpec: cdiv(max_memory_usage_bytes, page_size_bytes), whatever the length
        return group_window.blocks
    if isinstance(group_window, Chunk):
        # ChunkedLocalAttentionSpec.max_admission_blocks_per_request (0.32): one chunk plus the
        # in-flight tokens, no extra block (chunks start at multiples of the chunk size)
        return math.ceil(min(group_window.size + in_flight, max_model_len) / block_size)
    # sliding window: SlidingWindowSpec.max_admission_blocks_per_request (+1: the window may
    # start inside a block)
    tokens = min(group_window - 1 + in_flight, max_model_len)
    return math.ceil(tokens / block_size) + 1


def kv_capacity(lay: KVLayout, available_bytes: int, block_size: int, max_model_len: int,
             in_flight: int) -> KVCapacity:
    block_bytes = lay.bytes_per_token_per_layer * block_size * lay.group_size
    num_blocks = max(0, available_bytes // block_bytes) if block_bytes else 0
    n_groups = len(lay.groups)
    per_request = sum(blocks_for_request(w, max_model_len, block_size, in_flight) for _, w in lay.groups)
    concurrency = num_blocks / per_request if per_request else 0.0
    # vllm/v1/core/kv_cache_utils.py get_kv_cache_capacity (0.32)
    tokens = int(concurrency * max_model_len)
    return KVCapacity(num_blocks, num_blocks // n_groups * block_size, tokens, per_request, concurrency)

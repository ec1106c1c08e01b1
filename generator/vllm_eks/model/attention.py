"""The KV cache block size vLLM uses on a CUDA GPU, decided by the attention backend vLLM
selects for the model on that GPU. The Plan sizes the KV cache in blocks of this size and passes
it as `--block-size` (one decision, `Decisions.block`; for a hybrid with recurrent-state layers
`Decisions.block_for` raises it per TP as vLLM does, kvcache.attention_block_size).

What vLLM 0.32.0 does (read in its source, the release the chart pins):
- `vllm/platforms/cuda.py`, `_get_backend_priorities`: the backends in priority order, by
  compute capability major and by MLA or not; `get_attn_backend_cls` takes the first one whose
  `validate_configuration` (`vllm/v1/attention/backend.py`) passes: compute capability, KV cache
  dtype, model shape and, only when `--block-size` is given, `supports_block_size` (the block size
  is a multiple of one of the backend's `get_supported_kernel_block_sizes`). A given block size
  that rules out a faster backend only logs "--block-size N precluded higher-priority backend(s)".
- `vllm/platforms/interface.py`, `update_block_size_for_backend`: without `--block-size` the
  block size becomes the selected backend's `get_preferred_block_size(16)` (16 is
  `CacheConfig.DEFAULT_BLOCK_SIZE`, `vllm/config/cache.py`): 16 when the backend accepts 16,
  else its smallest kernel block size (FlashMLA: 64).
- Kernel block sizes and conditions, `vllm/v1/attention/backends/`: `mla/flashattn_mla.py`
  FLASH_ATTN_MLA multiples of 16, SM 9.x (FlashAttention 3), KV cache dtype auto/bf16/fp16 only;
  `mla/flashmla.py` FLASHMLA 64, SM 9.x and 10.x; `mla/flashinfer_mla.py` FLASHINFER_MLA 32 or
  64, SM 10.x, qk_nope_head_dim 64, 128 or 192; `mla/cutlass_mla.py` CUTLASS_MLA 128, SM 10.x;
  `mla/triton_mla.py` TRITON_MLA multiples of 16, any GPU; `flash_attn.py` FLASH_ATTN multiples of
  16, SM >= 8.0; `flashinfer.py` FLASHINFER 16, 32 or 64; `triton_attn.py` TRITON_ATTN multiples
  of 16, any GPU. (TOKENSPEED_MLA, after FLASHINFER_MLA on SM 10.x, takes only DeepSeek-R1's
  dimensions, which FLASHINFER_MLA takes too, so it is never selected here.)

Because the generator always passes `--block-size`, it passes what vLLM would pick without it,
so the flag never pushes vLLM off the backend it prefers."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.model.architecture import Architecture

VLLM_DEFAULT_BLOCK_SIZE = 16   # vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE
SOURCE = ("vLLM 0.32.0 vllm/platforms/cuda.py _get_backend_priorities, vllm/platforms/interface.py "
          "update_block_size_for_backend, vllm/v1/attention/backends/{mla/*,flash_attn,flashinfer,triton_attn}.py "
          "get_supported_kernel_block_sizes")


@dataclass(frozen=True)
class Backend:
    name: str
    sizes: tuple[int, ...]                  # kernel block sizes (a MultipleOf(n) is n)
    majors: frozenset[int] | None = None    # compute capability majors it runs on; None: any from min_major
    fp8_kv_cache: bool = True               # takes --kv-cache-dtype fp8
    qk_nope_head_dims: frozenset[int] | None = None   # MLA models it takes; None: any
    min_major: int = 8                      # with majors None: the oldest major it runs on

    def runs(self, major: int, arch: Architecture, kv_cache_dtype: str) -> bool:
        if self.majors is not None and major not in self.majors:
            return False
        if self.majors is None and major < self.min_major:
            return False
        if kv_cache_dtype == "fp8" and not self.fp8_kv_cache:
            return False
        return not (self.qk_nope_head_dims and arch.mla and arch.mla.qk_nope_head_dim not in self.qk_nope_head_dims)

    def accepts(self, block_size: int) -> bool:
        return any(block_size % size == 0 for size in self.sizes)

    def preferred(self) -> int:
        return VLLM_DEFAULT_BLOCK_SIZE if self.accepts(VLLM_DEFAULT_BLOCK_SIZE) else min(self.sizes)

    def describe(self) -> str:
        return f"{self.name} ({'/'.join(map(str, self.sizes))})"


FLASH_ATTN_MLA = Backend("FLASH_ATTN_MLA", (16,), frozenset({9}), fp8_kv_cache=False)
FLASHMLA = Backend("FLASHMLA", (64,), frozenset({9, 10}))
FLASHINFER_MLA = Backend("FLASHINFER_MLA", (32, 64), frozenset({10}), qk_nope_head_dims=frozenset({64, 128, 192}))
CUTLASS_MLA = Backend("CUTLASS_MLA", (128,), frozenset({10}))
# Turing (T4, SM 7.5): FLASH_ATTN's supports_compute_capability needs SM >= 8.0 (FlashAttention 2);
# so does FLASHINFER's in vLLM 0.32.0 (flashinfer.py FlashInferBackend.supports_compute_capability:
# ">= DeviceCapability(8, 0)", the floor raised from 7.5 while FlashInfer is broken on Turing);
# TRITON_ATTN (triton_attn.py: any capability) and TRITON_MLA run anywhere: a non-MLA model on a T4
# gets TRITON_ATTN, an MLA model TRITON_MLA, both with block size 16 and no FlashInfer workspace.
TRITON_MLA = Backend("TRITON_MLA", (16,), min_major=7)
FLASH_ATTN = Backend("FLASH_ATTN", (16,))
FLASHINFER = Backend("FLASHINFER", (16, 32, 64))
TRITON_ATTN = Backend("TRITON_ATTN", (16,), min_major=7)
# Sparse MLA (DeepSeek-V3.2), vllm/v1/attention/backends/mla/: flashattn_mla_sparse.py
# FLASH_ATTN_MLA_SPARSE multiples of 64, SM 9.x, bf16 cache only; flashmla_sparse.py FLASHMLA_SPARSE
# multiples of 64, SM 9.x and 10.x, bf16 or fp8_ds_mla; flashinfer_mla_sparse.py FLASHINFER_MLA_SPARSE
# multiples of 32, SM 10.x. The indexer's own backend (indexer.py DeepseekV32IndexerBackend) takes
# only 64 on CUDA, and vLLM picks a block size every backend of the model takes
# (platforms/interface.py update_block_size_for_backend): 64.
FLASH_ATTN_MLA_SPARSE = Backend("FLASH_ATTN_MLA_SPARSE", (64,), frozenset({9}), fp8_kv_cache=False)
FLASHMLA_SPARSE = Backend("FLASHMLA_SPARSE", (64,), frozenset({9, 10}))
FLASHINFER_MLA_SPARSE = Backend("FLASHINFER_MLA_SPARSE", (64,), frozenset({10}))


def priorities(major: int, mla: bool, sparse: bool = False, kv_cache_dtype: str = "auto") -> tuple[Backend, ...]:
    """vLLM's backend order for a compute capability major (vllm/platforms/cuda.py
    _get_backend_priorities; sparse MLA: its sparse tail, the dense MLA backends refuse a sparse
    model). On SM 10.x an FP8 cache puts FLASHINFER_MLA_SPARSE first, a bf16 cache FLASHMLA_SPARSE
    (DeepSeek-V3.2 has 128 heads, above the 16 that would prefer FlashInfer)."""
    if sparse:
        if major == 10:
            return ((FLASHINFER_MLA_SPARSE, FLASHMLA_SPARSE) if kv_cache_dtype == "fp8"
                    else (FLASHMLA_SPARSE, FLASHINFER_MLA_SPARSE))
        return (FLASH_ATTN_MLA_SPARSE, FLASHMLA_SPARSE)
    if mla:
        if major == 10:
            return (FLASHINFER_MLA, CUTLASS_MLA, FLASH_ATTN_MLA, FLASHMLA, TRITON_MLA)
        if major == 12:
            return (TRITON_MLA,)
        return (FLASH_ATTN_MLA, FLASHMLA, FLASHINFER_MLA, TRITON_MLA)
    if major == 10:
        return (FLASHINFER, FLASH_ATTN, TRITON_ATTN)
    return (FLASH_ATTN, FLASHINFER, TRITON_ATTN)


@dataclass(frozen=True)
class BlockSize:
    block_size: int
    backend: str | None     # the backend vLLM selects; None when the GPU generation is unknown
    why: str                # the derivation's formula text


def block_size(arch: Architecture, gpu: str, compute_capability: tuple[int, int] | None,
               kv_cache_dtype: str, pinned: int | None) -> BlockSize:
    """The block size vLLM runs with for this model on this GPU, and why."""
    sparse = arch.mla is not None and arch.mla.sparse
    kind = "sparse MLA (DeepSeek-V3.2 indexer)" if sparse else ("MLA" if arch.mla else "non-MLA")
    if compute_capability is None:
        if pinned:
            return BlockSize(pinned, None, "pinned by --block-size")
        if sparse:
            return BlockSize(64, None, (
                "GPU generation unknown (custom hardware): 64, the only block size the DeepSeek-V3.2 indexer "
                "backend takes on CUDA"))
        return BlockSize(VLLM_DEFAULT_BLOCK_SIZE, None, (
            f"GPU generation unknown (custom hardware): vLLM's default {VLLM_DEFAULT_BLOCK_SIZE}; "
            "MLA models on Hopper with an FP8 KV cache or on Blackwell need the backend's size, pin --block-size"))
    major = compute_capability[0]
    cc = ".".join(map(str, compute_capability))
    order = priorities(major, arch.mla is not None, sparse, kv_cache_dtype)
    running = [b for b in order if b.runs(major, arch, kv_cache_dtype)]
    if not running:   # dense: TRITON_MLA / TRITON_ATTN run everywhere; sparse MLA needs SM 9.x or 10.x
        raise InvalidOptionError(
            f"--instance: no vLLM 0.32 attention backend for a {kind} model on {gpu} (SM {cc}): "
            f"{', '.join(b.name for b in order)} run on SM 9.x/10.x only; use an H100, H200, B200 or B300 instance")
    first = running[0]
    if pinned:
        taking = [b for b in running if b.accepts(pinned)]
        if not taking:
            raise InvalidOptionError(
                f"--block-size {pinned}: no vLLM attention backend for this {kind} model on {gpu} (SM {cc}) takes it "
                f"({', '.join(b.describe() for b in running)}: a multiple of one of its sizes); "
                f"leave it unset for {first.preferred()}")
        chosen = taking[0]
        note = "" if chosen is first else f"; it rules out {first.name}, vLLM falls back to {chosen.name}"
        return BlockSize(pinned, chosen.name, f"pinned by --block-size{note}")
    ahead = [b.name for b in order[:order.index(first)]]
    return BlockSize(first.preferred(), first.name, (
        f"{kind} on {gpu} (SM {cc}), KV cache {kv_cache_dtype}: vLLM selects {first.describe()}"
        + (f" ({', '.join(ahead)} cannot run it)" if ahead else "")
        + f"; its preferred block size {first.preferred()} ({VLLM_DEFAULT_BLOCK_SIZE} if it takes "
          f"{VLLM_DEFAULT_BLOCK_SIZE}, else its smallest kernel size)"))

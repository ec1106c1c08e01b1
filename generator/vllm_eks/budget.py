"""The per-GPU memory budget of one TP x PP layout: vLLM's arithmetic from total GPU memory to
a whole number of KV cache blocks."""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import kvcache, overheads, weights
from .architecture import Architecture
from .hardware import Hardware


@dataclass(frozen=True)
class Precisions:
    dtype: str                 # activation / unquantized weight dtype vLLM runs
    dtype_bytes: int
    quantization: str | None   # method vLLM uses for the weights
    quant_bits: float | None
    quant_scope: str
    kv_cache_dtype: str        # auto | fp8
    kv_dtype_bytes: int


@dataclass(frozen=True)
class Settings:
    tp: int
    pp: int
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    kv_cache_memory_bytes: int | None
    async_scheduling: bool = True


@dataclass(frozen=True)
class StageBudget:
    stage: int
    requested: int
    weights: int
    over: overheads.Overheads
    available: int
    layout: kvcache.KVLayout


@dataclass(frozen=True)
class Budget:
    settings: Settings
    weights_total: int
    stages: tuple[StageBudget, ...]
    num_blocks: int

    @property
    def worst(self) -> StageBudget:
        """The stage with the fewest KV blocks decides: vLLM takes the minimum over workers."""
        return min(self.stages, key=lambda s: s.available // max(1, s.layout.bytes_per_token_per_layer * s.layout.group_size))

    @property
    def fits_weights(self) -> bool:
        return all(s.available > 0 for s in self.stages)

    def kv_capacity(self, max_model_len: int) -> kvcache.KVCapacity:
        w = self.worst
        s = self.settings
        return kvcache.kv_capacity(w.layout, w.available, s.block_size, max_model_len,
                                kvcache.in_flight_tokens(s.max_num_batched_tokens, s.pp, s.async_scheduling))


def compute(a: Architecture, hw: Hardware, p: Precisions, s: Settings) -> Budget:
    prec = weights.precision_for(a, p.dtype_bytes, p.quant_bits, p.quant_scope)
    # vLLM: requested_memory = ceil(total * gpu_memory_utilization)
    requested = math.ceil(hw.gpu_memory_bytes * s.gpu_memory_utilization)
    stages = []
    for stage, layers in enumerate(weights.layer_ranges(a.num_layers, s.pp)):
        w = weights.stage_bytes(a, prec, s.tp, s.pp, stage)
        over = overheads.estimate(a, s.tp, s.pp, len(layers), s.max_num_batched_tokens, s.max_num_seqs, p.dtype_bytes)
        if s.kv_cache_memory_bytes is not None:
            available = s.kv_cache_memory_bytes
        else:
            available = requested - w - over.activation_peak - over.non_torch - over.cudagraph
        stages.append(StageBudget(stage, requested, w, over, available,
                                  kvcache.layout(a, s.tp, layers, p.kv_dtype_bytes)))
    budget = Budget(s, weights.bytes_total(a, prec), tuple(stages), 0)
    cap = budget.kv_capacity(1)
    return Budget(s, budget.weights_total, budget.stages, cap.num_blocks)

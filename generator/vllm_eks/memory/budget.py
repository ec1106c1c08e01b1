"""The per-GPU memory budget of one TP x PP layout: vLLM's arithmetic from total GPU memory to
a whole number of KV cache blocks."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from vllm_eks.catalog.hub import HubModel, describe_weights
from vllm_eks.catalog.instances import Hardware
from vllm_eks.core.derivations import Derivations
from vllm_eks.core.units import gib
from vllm_eks.memory import kvcache, overheads
from vllm_eks.model import weights
from vllm_eks.model.architecture import Architecture
from vllm_eks.model.hybrid import StateLayers
from vllm_eks.spec import engine_versions
from vllm_eks.spec.plan import MemoryPlan


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
    # vLLM 0.32 subtracts its CUDA-graph estimate from the KV budget (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1,
    # the default since v0.21); older engines in the calibration logs did not.
    graphs_subtracted: bool = True
    # the attention backend vLLM selects (attention.py); FlashInfer keeps a workspace
    attention_backend: str | None = None
    # the vLLM release sized: its CUDA-graph capture rules (spec/engine_versions.py)
    vllm_version: str = engine_versions.SERVER_VLLM


@dataclass(frozen=True)
class StageBudget:
    stage: int
    requested: int
    weights: int
    over: overheads.Overheads
    available: int
    layout: kvcache.KVLayout
    # What a pinned KV cache (--kv-cache-memory-bytes) may take on this stage's GPUs: the whole
    # GPU minus weights and overheads; vLLM skips the utilization-based profile then.
    pin_room: int = 0
    # The same budget with the expected and the optimistic overhead constants (overheads.py): the
    # band `explain` shows; `available` is the cautious end.
    available_expected: int = 0
    available_optimistic: int = 0


@dataclass(frozen=True)
class Budget:
    settings: Settings
    weights_total: int
    stages: tuple[StageBudget, ...]
    num_blocks: int

    @property
    def worst(self) -> StageBudget:
        """The stage with the fewest KV blocks decides: vLLM takes the minimum over workers."""
        return min(self.stages,
                   key=lambda s: s.available // max(1, s.layout.bytes_per_token_per_layer * s.layout.group_size))

    @property
    def fits_weights(self) -> bool:
        return all(s.available > 0 for s in self.stages)

    def kv_capacity(self, max_model_len: int) -> kvcache.KVCapacity:
        w = self.worst
        s = self.settings
        return kvcache.kv_capacity(w.layout, w.available, s.block_size, max_model_len,
                                kvcache.in_flight_tokens(s.max_num_batched_tokens, s.pp, s.async_scheduling))


def _precision(a: Architecture, hw: Hardware, p: Precisions) -> weights.Precision:
    return weights.precision_for(a, p.dtype_bytes, p.quant_bits, p.quant_scope, hw.compute_capability, p.quantization)


@dataclass(frozen=True)
class Shape:
    """What a layout's budget holds whatever the engine settings: each stage's layer count,
    weight bytes and KV layout, and the checkpoint's size. `compute` derives it, or takes it
    from a caller that budgets the same layout at several max_num_seqs."""
    tp: int
    pp: int
    weights_total: int
    stages: tuple[tuple[int, int, kvcache.KVLayout], ...]   # (layers, weight bytes, KV layout) per stage


def shape(a: Architecture, hw: Hardware, p: Precisions, tp: int, pp: int) -> Shape:
    prec = _precision(a, hw, p)
    stages = tuple((len(layers), weights.stage_bytes(a, prec, tp, pp, stage),
                    kvcache.layout(a, tp, layers, p.kv_dtype_bytes, p.dtype_bytes))
                   for stage, layers in enumerate(weights.layer_ranges(a.num_layers, pp)))
    return Shape(tp, pp, weights.bytes_total(a, weights.as_stored(a, prec)), stages)


def compute(a: Architecture, hw: Hardware, p: Precisions, s: Settings, layout_shape: Shape | None = None) -> Budget:
    """The budget of settings `s`; `layout_shape` is `shape(a, hw, p, s.tp, s.pp)` when the
    caller already has it."""
    sh = layout_shape or shape(a, hw, p, s.tp, s.pp)
    if (sh.tp, sh.pp) != (s.tp, s.pp):
        raise ValueError(f"shape of TP={sh.tp} x PP={sh.pp} given for settings TP={s.tp} x PP={s.pp}")
    # vLLM: requested_memory = ceil(total * gpu_memory_utilization)
    requested = math.ceil(hw.gpu_memory_bytes * s.gpu_memory_utilization)
    stages = []
    # the overheads of a stage depend on its number of layers, not on which layers: stages of
    # the same length share one estimate
    by_length: dict[int, overheads.Overheads] = {}
    release = engine_versions.rules(s.vllm_version)
    blackwell = hw.compute_capability is not None and hw.compute_capability[0] == 10
    for stage, (layers, w, lay) in enumerate(sh.stages):
        over = by_length.get(layers)
        if over is None:
            over = overheads.estimate(a, s.tp, s.pp, layers, s.max_num_batched_tokens, s.max_num_seqs,
                                      p.dtype_bytes, max_capture(hw, s.vllm_version),
                                      nvlink="NVLink" in hw.interconnect, backend=s.attention_backend,
                                      blackwell=blackwell, with_max_num_seqs=release.captures_max_num_seqs)
            if not s.graphs_subtracted:
                over = over.without_graphs()
            by_length[layers] = over
        pin_room = hw.gpu_memory_bytes - w - over.total
        if s.kv_cache_memory_bytes is not None:
            # vLLM allocates the pinned KV cache beside the weights without profiling: a pin
            # larger than what the weights and overheads leave of the GPU cannot be allocated.
            available = s.kv_cache_memory_bytes if s.kv_cache_memory_bytes <= pin_room else 0
            band = (available, available)
        else:
            available = requested - w - over.total
            band = (requested - w - over.expected, requested - w - over.optimistic)
        stages.append(StageBudget(stage, requested, w, over, available, lay, pin_room, *band))
    budget = Budget(s, sh.weights_total, tuple(stages), 0)
    cap = budget.kv_capacity(1)
    return Budget(s, budget.weights_total, budget.stages, cap.num_blocks)


def max_capture(hw: Hardware, vllm_version: str = engine_versions.SERVER_VLLM) -> int:
    """vLLM's default largest CUDA-graph capture size: in 0.32 1024 on data-centre Blackwell
    (SM 10.x), else 512; 512 everywhere in 0.26 (spec/engine_versions.py)."""
    return engine_versions.rules(vllm_version).ceiling(hw.compute_capability)


def memory_plan(a: Architecture, hw: Hardware, p: Precisions, b: Budget, max_model_len: int,
                max_model_len_why: str, hub: HubModel | None = None) -> MemoryPlan:
    """The memory section of the Plan for budget `b` at `max_model_len`, with its derivations."""
    s, worst = b.settings, b.worst
    cap = b.kv_capacity(max_model_len)
    lay = worst.layout
    per_tok = max(st.layout.bytes_per_token for st in b.stages)
    prec = _precision(a, hw, p)
    d = Derivations()
    packing = prec.describe()
    stored = weights.as_stored(a, prec)
    estimate = (f"{weights.total_parameters(a):,} parameters: embeddings/norms x {stored.dense} B, attention x "
                f"{stored.attention} B, MLP x {stored.mlp} B, experts x {stored.experts} B")
    if hub is not None and hub.checkpoint is not None:
        est = weights.bytes_total(a, stored)
        d.add("weights_bytes_total", gib(b.weights_total), describe_weights(hub),
              f"the checkpoint as stored (downloaded and read), summed over its tensors; config.json estimate "
              f"{gib(est)} ({(b.weights_total - est) / max(est, 1):+.1%}); the per-GPU split follows config.json")
    else:
        d.add("weights_bytes_total", gib(b.weights_total),
              estimate + (f"; {describe_weights(hub)}" if hub is not None else ""),
              "bytes per parameter of the checkpoint as stored (downloaded and read)")
    d.add("weights_bytes_per_gpu", gib(worst.weights),
          f"linear layers / TP {s.tp}, layers of the largest of {s.pp} stage(s), "
          "embedding on the first and LM head on the last"
          + (f"; {packing}" if packing else ""),
          f"packed weights as the kernel vLLM 0.32 picks on {hw.gpu} (SM {_cc(hw)}) holds them after loading "
          f"(docs/memory-model.md){_layout_band(a, prec, s, worst.stage)}" if packing else "")
    d.add("kv_bytes_per_token_per_gpu", f"{per_tok:,} B",
          _kv_formula(a, p, s.tp, lay.layers_on_rank - lay.state_layers),
          "KV heads are replicated when fewer than TP ranks; MLA latents are not split by TP"
          + ("; recurrent-state layers keep no per-token cache" if lay.state_layers else ""))
    if len(lay.groups) > 1:
        d.add("kv_cache_groups", f"{len(lay.groups)} groups of {lay.group_size} layers",
              ", ".join(f"{n} {kvcache.describe(w)}" for n, w in lay.groups),
              "vLLM hybrid allocator: sliding-window layers keep at most window + batch tokens"
              + (", chunked local attention layers one chunk + batch tokens"
                 if any(isinstance(w, kvcache.Chunk) for _, w in lay.groups) else "")
              + (", recurrent-state layers a fixed number of state blocks (vllm/v1/core/kv_cache_utils.py "
                 "_get_kv_cache_groups_uniform_page_size)" if lay.state_layers else ""))
    if lay.state_layers and a.state is not None:
        _state_derivation(d, a.state, s, lay)
    _available_derivations(d, hw, s, worst)
    block_bytes = lay.bytes_per_token_per_layer * s.block_size * lay.group_size
    d.add("kv_cache_blocks", f"{cap.num_blocks:,}",
          f"floor({worst.available:,} B / ({lay.bytes_per_token_per_layer} B x block {s.block_size} x "
          f"{lay.group_size} layers = {block_bytes:,} B))")
    d.add("kv_cache_tokens", f"{cap.tokens:,}",
          f"int(max_concurrency {cap.max_concurrency:.4f} x max_model_len {max_model_len})",
          f"vLLM 0.32 get_kv_cache_capacity; the cache holds {cap.slots:,} token slots ({cap.num_blocks:,} blocks / "
          f"{len(lay.groups)} group(s) x block_size {s.block_size})")
    d.add("max_model_len", str(max_model_len), max_model_len_why)
    d.add("max_concurrency", f"{cap.max_concurrency:.2f}x",
          f"{cap.num_blocks:,} blocks / {cap.blocks_per_request} blocks per {max_model_len}-token request")
    return MemoryPlan(
        dtype=p.dtype, quantization=p.quantization, kv_cache_dtype=p.kv_cache_dtype,
        weights_bytes_total=b.weights_total, weights_bytes_per_gpu=max(st.weights for st in b.stages),
        activation_peak_bytes=worst.over.activation_peak, non_torch_bytes=worst.over.non_torch,
        cudagraph_bytes=worst.over.cudagraph, kv_bytes_per_token_per_gpu=per_tok, block_size=s.block_size,
        available_kv_cache_bytes_per_gpu=worst.available, kv_cache_blocks=cap.num_blocks, kv_cache_tokens=cap.tokens,
        max_model_len=max_model_len, max_concurrency=round(cap.max_concurrency, 2),
        model_max_len=a.max_len, derivations=d.items)


def _state_derivation(d: Derivations, st: StateLayers, s: Settings, lay: kvcache.KVLayout) -> None:
    """How a hybrid's recurrent state is sized (hybrid.py, vLLM MambaSpec)."""
    page = lay.bytes_per_token_per_layer * s.block_size
    d.add("state_bytes_per_sequence_per_gpu", f"{lay.state_bytes_per_sequence:,} B",
          f"{lay.state_layers} {st.kind} layers x {lay.state_bytes_per_layer:,} B (convolution window of "
          f"{st.conv_kernel - 1} inputs + {st.heads} heads x {st.head_dims[0]} x {st.head_dims[1]} state, "
          f"/ TP {s.tp}); "
          f"each layer's state is padded to one attention page of {page:,} B (block {s.block_size} x "
          f"{lay.bytes_per_token_per_layer:,} B) and a request holds {st.blocks_per_request} state blocks "
          "per state group "
          f"({st.blocks_per_request * lay.group_size * page:,} B per group of {lay.group_size} layers)",
          "vLLM 0.32 MambaSpec (vllm/v1/kv_cache_interface.py) in mamba_cache_mode 'align', set with prefix caching "
          "(vllm/model_executor/models/config.py MambaModelConfig): the running state and the last block-aligned "
          "checkpoint" + (", plus one prefill checkpoint block (mamba_mixer2.py)" if st.checkpoint_blocks else ""))


def _layout_band(a: Architecture, prec: weights.Precision, s: Settings, stage: int) -> str:
    """The uncertainty band when the backend vLLM runs is one of several (MXFP4 on Hopper): each
    layout's weights on this GPU, the largest counting."""
    if len(prec.experts_layouts) < 2:
        return ""
    each = [(lay.backend, weights.stage_bytes(a, replace(prec, experts_layouts=(lay,)), s.tp, s.pp, stage))
            for lay in prec.experts_layouts]
    return "; per backend: " + ", ".join(f"{name} {gib(n)}" for name, n in each) + " (the largest counts)"


def _cc(hw: Hardware) -> str:
    return ".".join(map(str, hw.compute_capability)) if hw.compute_capability else "unknown"


def _kv_formula(a: Architecture, p: Precisions, tp: int, layers: int) -> str:
    if a.mla and a.mla.sparse:
        latent = (f"fp8_ds_mla row {kvcache.FP8_DS_MLA_BYTES} B" if p.kv_dtype_bytes == 1 else
                  f"(kv_lora_rank {a.mla.kv_lora_rank} + rope {a.mla.qk_rope_head_dim}) x {p.kv_dtype_bytes} B")
        return (f"sparse MLA: {latent} + indexer key ({a.mla.index_head_dim} fp8 + "
                f"{a.mla.index_head_dim // kvcache.INDEXER_QUANT_BLOCK} x 4 B scale) x {layers} layers "
                "(one KV cache group, each layer's page the sum of both)")
    if a.mla:
        return (f"MLA: (kv_lora_rank {a.mla.kv_lora_rank} + rope {a.mla.qk_rope_head_dim}) x "
                f"{p.kv_dtype_bytes} B x {layers} layers")
    return (f"2 x {kvcache.kv_heads_per_rank(a, tp)} KV heads/rank x head_dim {a.head_dim} x "
            f"{p.kv_dtype_bytes} B x {layers} layers")


def _available_derivations(d: Derivations, hw: Hardware, s: Settings, worst: StageBudget) -> None:
    if s.kv_cache_memory_bytes is not None:
        d.add("available_kv_cache_bytes_per_gpu", gib(worst.available),
              "pinned by --kv-cache-memory (vLLM --kv-cache-memory-bytes)")
        d.add("available_kv_cache_band_per_gpu", " / ".join([gib(worst.available)] * 3),
              "pinned: vLLM allocates exactly this, with no profile to move it (docs/memory-model.md section 4)")
        return
    d.add("requested_bytes", gib(worst.requested),
          f"{gib(hw.gpu_memory_bytes)} x gpu_memory_utilization {s.gpu_memory_utilization}")
    d.add("activation_peak_bytes", gib(worst.over.activation_peak), worst.over.activation_formula,
          "profile run: the larger of the forward pass over max_num_batched_tokens and the sampler over "
          "the sequences (docs/memory-model.md)")
    d.add("non_torch_bytes", gib(worst.over.non_torch), worst.over.non_torch_formula)
    d.add("cudagraph_bytes", gib(worst.over.cudagraph), worst.over.cudagraph_formula)
    d.add("available_kv_cache_bytes_per_gpu", gib(worst.available),
          "requested - weights - activation peak - non-torch - CUDA graphs",
          "the cautious end of the band below: vLLM measures these terms at start-up and should get at least this")
    d.add("available_kv_cache_band_per_gpu",
          f"{gib(worst.available)} / {gib(worst.available_expected)} / {gib(worst.available_optimistic)}",
          "low (planned) / expected / high: the same budget with the expected and the optimistic constants",
          "uncertain terms: CUDA-graph memory per layer and graph (0.5 / 0.3 / 0.2 MiB), forward activations "
          "(x1.15 / x1.0 / x0.9 of the width formula), sampler fp32 logit copies (10 / 9.7 / 7.2); weights and "
          "non-torch memory are the same in all three "
          "(docs/memory-model.md section 4)")

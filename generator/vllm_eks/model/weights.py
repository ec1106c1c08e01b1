"""Parameter counts and weight bytes, split the way vLLM shards them.

Linear layers are sharded over tensor-parallel ranks; pipeline stages hold only their own
layers, the first stage the embedding and the last the LM head. Embeddings, norms and routers
stay in the model dtype when a checkpoint is quantized (vLLM does not quantize them). Packed
formats (MXFP4 experts, AWQ/GPTQ linear layers) are counted per GPU as the kernel vLLM picks for
the GPU generation holds them (packed.py); the checkpoint total stays the stored size."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from vllm_eks.model import packed
from vllm_eks.model.architecture import Architecture


@dataclass(frozen=True)
class LayerParams:
    attention: int        # q/k/v/o projections (or MLA projections)
    kv_projection: int    # the part of `attention` that K/V heads own (replicated when kv_heads < TP)
    dense_mlp: int
    experts: int          # all routed experts of the layer
    other: int            # norms, router, biases: small, kept in model dtype
    # quantized like attention but whole on every TP rank: DeepSeek-V3.2's indexer query
    # projection (wq_b, a ReplicatedLinear in vllm/models/deepseek_v32/attention.py)
    replicated: int = 0


def layer_params(a: Architecture, index: int) -> LayerParams:
    h = a.hidden_size
    if a.mla is not None:
        m = a.mla
        q_dim = a.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        q = h * q_dim if not m.q_lora_rank else h * m.q_lora_rank + m.q_lora_rank * q_dim
        kv_a = h * (m.kv_lora_rank + m.qk_rope_head_dim)
        kv_b = m.kv_lora_rank * a.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim)
        o = a.num_attention_heads * m.v_head_dim * h
        attention, kv_projection = q + kv_a + kv_b + o, 0
    elif a.state is not None and a.state.layers[index]:
        # a recurrent-state layer: its mixer (hybrid.py) in place of attention, split over TP
        attention, kv_projection = a.state.mixer_params, 0
    else:
        # an output gate doubles q_proj's width (Qwen3-Next gated attention)
        q = h * a.num_attention_heads * a.head_dim * (2 if a.attention_gate else 1)
        kv = 2 * h * a.num_kv_heads * a.head_dim
        o = a.num_attention_heads * a.head_dim * h
        attention, kv_projection = q + kv + o, kv
    replicated = indexer_other = 0
    if a.mla is not None and a.mla.sparse:
        m = a.mla
        # DeepseekV32Indexer: wq_b (q_lora_rank -> index heads x index_head_dim, quantized,
        # replicated), wk_weights_proj (hidden -> index_head_dim + index heads, unquantized,
        # disable_tp) and k_norm (LayerNorm weight and bias)
        replicated = (m.q_lora_rank or 0) * m.index_n_heads * m.index_head_dim
        indexer_other = h * (m.index_head_dim + m.index_n_heads) + 2 * m.index_head_dim
    norms = 2 * h + indexer_other
    bias = (a.num_attention_heads + 2 * a.num_kv_heads) * a.head_dim if a.attention_bias and kv_projection else 0
    moe = a.moe
    if moe is None or not moe.is_moe_layer(index):
        inter = moe.dense_intermediate_size if moe is not None else a.intermediate_size
        return LayerParams(attention, kv_projection, 3 * h * inter, 0, norms + bias, replicated)
    experts = moe.num_experts * 3 * h * moe.expert_intermediate_size
    shared = 3 * h * moe.shared_expert_intermediate_size
    router = h * moe.num_experts
    return LayerParams(attention, kv_projection, shared, experts, norms + bias + router, replicated)


@lru_cache(maxsize=256)
def layer_table(a: Architecture) -> tuple[LayerParams, ...]:
    return tuple(layer_params(a, i) for i in range(a.num_layers))


def embedding_params(a: Architecture) -> tuple[int, int]:
    """(input embedding, LM head) parameters; a tied head shares the embedding's storage."""
    emb = a.vocab_size * a.hidden_size
    return emb, (0 if a.tie_word_embeddings else emb)


@lru_cache(maxsize=256)
def total_parameters(a: Architecture) -> int:
    emb, head = embedding_params(a)
    layers = sum(_sum(lp) for lp in layer_table(a))
    return emb + head + layers + a.hidden_size + a.vision_params


def _sum(p: LayerParams) -> int:
    return p.attention + p.dense_mlp + p.experts + p.other + p.replicated


@dataclass(frozen=True)
class Precision:
    """Bytes per element of each class of weights after loading."""

    dense: float       # bytes per parameter of unquantized tensors (model dtype)
    attention: float   # bytes per parameter of attention projections
    mlp: float         # bytes per parameter of dense-MLP (and shared-expert) linear layers
    experts: float     # bytes per parameter of MoE experts
    # MXFP4 experts: the MoE backends' layouts (padded shapes, scales, biases); the largest
    # replaces `experts`
    experts_layouts: tuple[packed.Mxfp4Layout, ...] = ()
    # AWQ/GPTQ: the kernel the linear layers are repacked for (its bits are in attention/mlp)
    linear: packed.LinearPacking | None = None

    def describe(self) -> str:
        if self.experts_layouts:
            return "experts as the largest of the MXFP4 MoE layouts " + "; ".join(
                lay.describe() for lay in self.experts_layouts)
        if self.linear is not None:
            return f"linear layers as {self.linear.describe()}"
        return ""


def precision_for(a: Architecture, dtype_bytes: int, quant_bits: float | None, quant_scope: str,
                  compute_capability: tuple[int, int] | None = None, method: str | None = None) -> Precision:
    """quant_scope: "linear" quantizes every linear layer, "mlp" only the feed-forward layers
    (Meta's FBGEMM FP8 checkpoints), "experts" only the routed experts (gpt-oss MXFP4).
    Packed checkpoints (MXFP4, AWQ, GPTQ) are sized as the kernel vLLM picks for the GPU's compute
    capability holds them (packed.py)."""
    if quant_bits is None:
        return Precision(dtype_bytes, dtype_bytes, dtype_bytes, dtype_bytes)
    q = quant_bits / 8
    if method == "mxfp4" and a.moe is not None:
        return Precision(dtype_bytes, dtype_bytes, dtype_bytes, q, packed.mxfp4_layouts(compute_capability))
    ckpt = a.quantization
    if ckpt is not None and ckpt.class_bits and method == ckpt.method:
        # compressed-tensors: each class of linear layers as its config group stores it, the
        # unquantized ones (ignore list) in the model dtype
        att, mlp, exp = (b / 8 if b is not None else dtype_bytes for b in ckpt.class_bits)
        return Precision(dtype_bytes, att, mlp, exp)
    if method in ("awq", "gptq") and ckpt is not None and ckpt.method == method:
        linear = packed.linear_packing(ckpt, compute_capability)
        q = linear.bits / 8
        return Precision(dtype_bytes, q, q, q, linear=linear)
    if quant_scope == "experts":
        return Precision(dtype_bytes, dtype_bytes, dtype_bytes, q)
    if quant_scope == "mlp":
        return Precision(dtype_bytes, dtype_bytes, q, q)
    return Precision(dtype_bytes, q, q, q)


def pp_layer_split(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as vLLM splits them (vllm/distributed/utils.py get_pp_indices):
    even shares, the remainder added one by one to the stages before the last, counting back
    from the second-to-last, because the last stage also holds the LM head."""
    base, rem = divmod(num_layers, pp)
    split = [base] * pp
    for i in range(rem):
        split[pp - 2 - i if pp > 1 else 0] += 1
    return split


@lru_cache(maxsize=1024)
def layer_ranges(num_layers: int, pp: int) -> tuple[range, ...]:
    out, start = [], 0
    for n in pp_layer_split(num_layers, pp):
        out.append(range(start, start + n))
        start += n
    return tuple(out)


@lru_cache(maxsize=1024)
def bytes_total(a: Architecture, p: Precision) -> int:
    emb, head = embedding_params(a)
    total = (emb + head + a.hidden_size + a.vision_params) * p.dense
    for lp in layer_table(a):
        total += ((lp.attention + lp.replicated) * p.attention + lp.dense_mlp * p.mlp + lp.experts * p.experts
                  + lp.other * p.dense)
    return int(total)


def as_stored(a: Architecture, p: Precision) -> Precision:
    """The checkpoint's own precision (what is downloaded and read), without the loaded layout."""
    if p.linear is not None and a.quantization is not None:
        q = a.quantization.bits / 8
        return Precision(p.dense, q, q, q)
    return Precision(p.dense, p.attention, p.mlp, p.experts)


def _experts_bytes(a: Architecture, p: Precision, tp: int, lp: LayerParams) -> float:
    if lp.experts and p.experts_layouts:
        return max(packed.mxfp4_expert_bytes(a, tp, lay) for lay in p.experts_layouts)
    return lp.experts / tp * p.experts


def _act_order_bytes(a: Architecture, p: Precision, tp: int) -> float:
    if p.linear is None or not p.linear.act_order or a.quantization is None:
        return 0.0
    return packed.act_order_bytes(a, tp, a.quantization)


def _layer_bytes(a: Architecture, p: Precision, tp: int, lp: LayerParams) -> float:
    # K/V projections cannot be split below one KV head per rank: the rest is replicated
    kv_share = lp.kv_projection * max(1.0, tp / a.num_kv_heads) / tp if lp.kv_projection else 0
    attention = (lp.attention - lp.kv_projection) / tp + kv_share + lp.replicated
    return (attention * p.attention + lp.dense_mlp / tp * p.mlp + _experts_bytes(a, p, tp, lp)
            + _act_order_bytes(a, p, tp) + lp.other * p.dense)


@lru_cache(maxsize=4096)
def stage_bytes(a: Architecture, p: Precision, tp: int, pp: int, stage: int) -> int:
    """Weight bytes on one GPU of pipeline stage `stage` in a TP x PP group."""
    emb, head = embedding_params(a)
    layers = layer_ranges(a.num_layers, pp)[stage]
    b = 0.0
    if stage == 0:
        b += emb * p.dense / tp + a.vision_params * p.dense
    if stage == pp - 1:
        # a tied head reuses the embedding on one stage; across stages the last keeps its own copy
        head_params = head if head else (emb if pp > 1 else 0)
        b += head_params * p.dense / tp + a.hidden_size * p.dense
    table = layer_table(a)
    # layers come in few shapes (leading dense layers, MoE layers, Llama 4's interleaved dense
    # layers): count each shape once
    shapes: dict[LayerParams, int] = {}
    for i in layers:
        shapes[table[i]] = shapes.get(table[i], 0) + 1
    for lp, n in shapes.items():
        b += n * _layer_bytes(a, p, tp, lp)
    return int(b)


def bytes_per_gpu(a: Architecture, p: Precision, tp: int, pp: int) -> int:
    """Weight bytes on the most loaded GPU of a TP x PP group."""
    return max(stage_bytes(a, p, tp, pp, s) for s in range(pp))

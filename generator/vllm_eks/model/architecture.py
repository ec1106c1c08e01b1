"""Architecture facts of a model, read from a Hugging Face `config.json` dictionary.

Only what the memory model needs: layer count and shapes, attention kind (MHA/GQA or MLA),
which layers use a sliding window or chunked local attention, mixture-of-experts sizes, and the
checkpoint's precision, and the recurrent-state layers of the hybrids sized in hybrid.py
(Qwen3-Next, Granite 4.0-H). What the sizing does not model (other state-space and
linear-attention models) is refused by name (`refuse_unmodelled`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vllm_eks.core.errors import ModelConfigError, UnsupportedArchitectureError
from vllm_eks.model import compressed_tensors, rope
from vllm_eks.model.hybrid import MAX_CONFIG_INT, StateLayers, is_sized, state_layers

# torch dtype names as config.json writes them -> bytes per element
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


@dataclass(frozen=True)
class MoE:
    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_expert_intermediate_size: int = 0
    dense_layers: int = 0  # leading layers with a dense MLP (DeepSeek first_k_dense_replace)
    dense_intermediate_size: int = 0
    # MoE only in every layer_step-th layer, a dense MLP of dense_intermediate_size in the others
    # (Llama 4 interleave_moe_layer_step; vllm/model_executor/models/llama4.py Llama4DecoderLayer)
    layer_step: int = 1

    def is_moe_layer(self, index: int) -> bool:
        return index >= self.dense_layers and (index + 1) % self.layer_step == 0


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): the cache holds one compressed latent
    vector plus the rotary part per token per layer, shared by all heads."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None
    # DeepSeek-V3.2 sparse attention: the indexer's key width and heads (0: no indexer)
    index_head_dim: int = 0
    index_n_heads: int = 0

    @property
    def sparse(self) -> bool:
        return self.index_head_dim > 0


@dataclass(frozen=True)
class Quantization:
    method: str  # fp8 | awq | gptq | mxfp4
    bits: float  # storage bits per quantized weight, scales included, as the checkpoint stores them
    scope: str = "linear"  # "linear": every linear layer; "mlp": feed-forward only; "experts": MoE experts only
    # AWQ/GPTQ only: what the kernel vLLM repacks them for keeps (weights.packed_linear_bits)
    weight_bits: int = 0      # bits per packed value
    group_size: int = 0       # values per scale; -1 one scale per output channel
    zero_point: bool = False  # asymmetric: one zero point per group (AWQ zero_point, GPTQ sym false)
    act_order: bool = False   # GPTQ desc_act: vLLM keeps g_idx and its sort order per layer
    # compressed-tensors: storage bits of (attention, dense MLP and shared experts, routed experts)
    # linear layers, None where the checkpoint keeps them unquantized (ignore list, targets)
    class_bits: tuple[float | None, ...] = ()


@dataclass(frozen=True)
class Architecture:
    name: str
    architectures: tuple[str, ...]
    model_type: str
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    checkpoint_dtype: str
    attention_bias: bool = False
    # window size per layer, None for full attention; length num_layers
    layer_windows: tuple[int | None, ...] = ()
    # attention chunk per layer for chunked local attention (Llama 4), None for other layers
    layer_chunks: tuple[int | None, ...] = ()
    moe: MoE | None = None
    mla: MLA | None = None
    quantization: Quantization | None = None
    vision_params: int = 0  # parameters of a vision tower loaded beside the text model
    # recurrent-state layers of a sized hybrid (hybrid.py), None for a plain transformer
    state: StateLayers | None = None
    # attention output gate: q_proj also produces a per-head gate (Qwen3-Next attn_output_gate)
    attention_gate: bool = False
    # the longest max_model_len vLLM 0.32 accepts, rope scaling applied (rope.py); 0: max_position_embeddings
    derived_max_len: int = 0
    derived_max_len_why: str = "max_position_embeddings"

    @property
    def max_len(self) -> int:
        return self.derived_max_len or self.max_position_embeddings

    @property
    def has_sliding_window(self) -> bool:
        return any(w is not None for w in self.layer_windows)

    @property
    def has_chunked_attention(self) -> bool:
        return any(c is not None for c in self.layer_chunks)


# Fields some config.json files leave to the transformers config class's defaults.
CLASS_DEFAULTS = {
    # Gemma3TextConfig: without layer_types every 6th layer is global, the others slide
    "gemma3_text": {"vocab_size": 262208, "max_position_embeddings": 131072, "sliding_window_pattern": 6},
    # Gemma2Config: without layer_types sliding and global layers alternate
    "gemma2": {"sliding_window_pattern": 2},
    # transformers Llama4TextConfig (models/llama4/configuration_llama4.py): the keys that shape
    # the layers; vLLM reads the config object, so these defaults are what it runs with
    "llama4_text": {"attention_chunk_size": 8192, "interleave_moe_layer_step": 1,
                    "intermediate_size_mlp": 16384, "no_rope_layer_interval": 4},
}


# Upper bounds of config integers, checked before anything loops over layers or multiplies
# shapes: the largest published models have under 200 decoder layers and widths, vocabularies and
# context lengths far below 2^31 (vLLM and torch index token positions and shapes as int32/int64).
# A bound names the key, so a typo such as 10^9 layers is one line instead of a hang.
MAX_LAYERS = 1024
FIELD_MAX = {"num_hidden_layers": MAX_LAYERS, "depth": MAX_LAYERS, "num_global_layers": MAX_LAYERS,
             "first_k_dense_replace": MAX_LAYERS, "interleave_moe_layer_step": MAX_LAYERS}


def _get(cfg: dict, key: str, where: str, kind: type = int, required: bool = True, default=None,
         minimum: int = 1):
    """cfg[key] checked against the type transformers' config class declares: a JSON string
    where a number belongs, or "false" where a boolean belongs, would otherwise change the
    arithmetic silently. Integers are also bounded (FIELD_MAX, else MAX_CONFIG_INT)."""
    if key not in cfg or cfg[key] is None:
        if required:
            raise ModelConfigError(f"{where}: missing required field '{key}'")
        return default
    value = cfg[key]
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise ModelConfigError(f"{where}: field '{key}' must be {what}, got {_shown(value)}")
        check_bound(value, key, where)
    elif kind is bool and not isinstance(value, bool):
        raise ModelConfigError(f"{where}: field '{key}' must be true or false, got {_shown(value)}")
    elif kind is str and not isinstance(value, str):
        raise ModelConfigError(f"{where}: field '{key}' must be a string, got {_shown(value)}")
    elif kind is list and not isinstance(value, list):
        raise ModelConfigError(f"{where}: field '{key}' must be a list, got {_shown(value)}")
    elif kind is dict and not isinstance(value, dict):
        raise ModelConfigError(f"{where}: field '{key}' must be an object, got {_shown(value)}")
    return value


def check_bound(value: int, key: str, where: str) -> None:
    """A config integer above its sane bound (FIELD_MAX, else MAX_CONFIG_INT): a one-line error."""
    bound = FIELD_MAX.get(key, MAX_CONFIG_INT)
    if value > bound:
        raise ModelConfigError(f"{where}: field '{key}' must be at most {bound:,}, got {_shown(value)}")


def _shown(value: Any) -> str:
    """A config value in a one-line message: JSON-ish, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# Bits per weight AWQ and GPTQ kernels in vLLM accept; group_size -1 means one scale per
# output channel (GPTQ "no grouping").
PACKED_BITS = (2, 3, 4, 8)


def _quantization(cfg: dict, where: str) -> Quantization | None:
    q = cfg.get("quantization_config")
    if not q:
        return None
    if not isinstance(q, dict):
        raise ModelConfigError(f"{where}: 'quantization_config' must be an object")
    where_q = f"{where} quantization_config"
    method = str(_get(q, "quant_method", where_q, kind=str, required=False, default="")).lower()
    if method == "fp8":
        return Quantization("fp8", 8.0)
    if method in ("awq", "gptq"):
        bits_key = "bits" if "bits" in q else "w_bit"
        bits = _get(q, bits_key, where_q, required=False, default=4)
        if bits not in PACKED_BITS:
            raise ModelConfigError(f"{where_q}: '{bits_key}' must be one of {list(PACKED_BITS)}, got {_shown(bits)}")
        group_key = "group_size" if "group_size" in q else "q_group_size"
        group = _get(q, group_key, where_q, required=False, default=128, minimum=-1)
        if group == 0:
            raise ModelConfigError(f"{where_q}: '{group_key}' must be a positive integer or -1 (per channel), got 0")
        if method == "awq":
            zero_point = _get(q, "zero_point", where_q, kind=bool, required=False, default=True)
            act_order = False
        else:
            zero_point = not _get(q, "sym", where_q, kind=bool, required=False, default=True)
            act_order = _get(q, "desc_act", where_q, kind=bool, required=False, default=False)
        # packed weights plus one fp16 scale and one packed zero point per group (per output
        # channel with -1: negligible against the weights)
        return Quantization(method, bits + ((16 + bits) / group if group > 0 else 0.0), weight_bits=bits,
                            group_size=group, zero_point=zero_point, act_order=act_order)
    if method == "fbgemm_fp8":
        # Meta's FP8 checkpoints: feed-forward layers in FP8, attention kept in 16 bits
        return Quantization("fbgemm_fp8", 8.0, scope="mlp")
    if method == "mxfp4":
        # 4-bit values with one 8-bit shared exponent per 32 values; only the experts
        return Quantization("mxfp4", 4.25, scope="experts")
    if method == "compressed-tensors":
        return Quantization(**compressed_tensors.quantization(q, where_q))
    raise ModelConfigError(
        f"{where}: quantization_config.quant_method '{method}' is not supported "
        "(valid: fp8, fbgemm_fp8, awq, gptq, mxfp4, compressed-tensors)")


# layer_types values the sizing models; others are refused by name (refuse_unmodelled)
ATTENTION_LAYER_TYPES = ("full_attention", "sliding_attention")


def _layer_windows(cfg: dict, num_layers: int, where: str, llama4: bool = False) -> tuple[int | None, ...]:
    # null (or absent) means no sliding window; a window is a positive number of tokens. Some
    # tools write -1 or 0 for "none", which transformers does not: refused rather than guessed.
    window = _get(cfg, "sliding_window", where, required=False, default=None)
    layer_types = _get(cfg, "layer_types", where, kind=list, required=False, default=None)
    if llama4:
        # vLLM's Llama 4 reads no_rope_layers, not layer_types (_layer_chunks); no sliding window
        return (None,) * num_layers
    if layer_types:
        if len(layer_types) != num_layers or not all(isinstance(t, str) for t in layer_types):
            raise ModelConfigError(
                f"{where}: 'layer_types' must list one attention type name per layer ({num_layers})")
        if "chunked_attention" in layer_types:
            raise UnsupportedArchitectureError(
                f"{where}: field 'layer_types' has 'chunked_attention' layers, which vLLM 0.32 builds only in its "
                "Llama 4 model (vllm/model_executor/models/llama4.py); supported here: chunked local attention "
                "of Llama 4 configs, full and sliding-window attention of others")
        if any(t == "sliding_attention" for t in layer_types) and not window:
            raise ModelConfigError(f"{where}: 'layer_types' has sliding layers but no 'sliding_window'")
        return tuple(window if t == "sliding_attention" else None for t in layer_types)
    if not window:
        return (None,) * num_layers
    if _get(cfg, "use_sliding_window", where, kind=bool, required=False, default=True) is False:
        return (None,) * num_layers
    pattern = _get(cfg, "sliding_window_pattern", where, required=False, default=None)
    if pattern is not None and pattern > 1:
        # every pattern-th layer is global, the others slide (Gemma 2/3)
        return tuple(None if (i + 1) % pattern == 0 else window for i in range(num_layers))
    return (window,) * num_layers


def _is_llama4(cfg: dict, archs: list) -> bool:
    """vLLM builds chunked local attention only in its Llama 4 model
    (vllm/model_executor/models/llama4.py); other models' attention_chunk_size is not read there."""
    return (str(cfg.get("model_type")) in ("llama4", "llama4_text")
            or any(isinstance(a, str) and a.startswith("Llama4") for a in archs))


def _layer_chunks(cfg: dict, num_layers: int, where: str) -> tuple[int | None, ...]:
    """Llama 4's chunked local attention, as vLLM 0.32 builds it (llama4.py Llama4Attention): a
    layer with no_rope_layers[i] == 0 is a global (NoPE) full-attention layer; every other layer
    attends within chunks of attention_chunk_size tokens (ChunkedLocalAttention). An empty or
    absent no_rope_layers becomes transformers' default: every no_rope_layer_interval-th layer
    global (Llama4TextConfig.__post_init__)."""
    chunk = _get(cfg, "attention_chunk_size", where, required=False, default=None)
    if chunk is None:
        return ()
    nope = _get(cfg, "no_rope_layers", where, kind=list, required=False, default=None)
    if not nope:
        interval = _get(cfg, "no_rope_layer_interval", where, required=False, default=4)
        return tuple(None if (i + 1) % interval == 0 else chunk for i in range(num_layers))
    if len(nope) < num_layers or not all(type(v) is int and v in (0, 1) for v in nope):
        raise ModelConfigError(
            f"{where}: 'no_rope_layers' must hold a 0 (global layer) or 1 (chunked layer) for each of the "
            f"{num_layers} layers, got {_shown(nope)}")
    return tuple(None if nope[i] == 0 else chunk for i in range(num_layers))


# transformers' vision config classes' defaults for the keys a sparse vision_config leaves out
# (models/clip/configuration_clip.py CLIPVisionConfig, models/siglip/configuration_siglip.py
# SiglipVisionConfig); Gemma 3's vision_config is a SigLIP one (Gemma3Config)
VISION_DEFAULTS = {
    "clip_vision_model": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12},
    "siglip_vision_model": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12},
}
# multimodal wrappers whose projector into the text width is a two-layer MLP with biases
# (vllm/model_executor/models/llava.py LlavaMultiModalProjector: linear_1 vision -> text width,
# linear_2 text -> text width)
LLAVA_TYPES = ("llava", "llava_next", "llava_next_video", "llava_onevision")


def _vision_params(top: dict, text_hidden: int) -> int:
    """Parameters of the vision encoder and its projector, loaded beside the text model. A
    vision_config the sizing cannot read whole is refused naming the missing key, never
    counted as 0."""
    v = top.get("vision_config")
    if v is None:
        return 0
    where = "vision_config"
    if not isinstance(v, dict):
        raise ModelConfigError(f"{where}: field 'vision_config' must be an object, got {_shown(v)}")
    if "depth" in v and "num_hidden_layers" not in v:
        if "embed_dim" in v:
            return _qwen2_vl_vision_params(v, where)
        return _qwen_vl_vision_params(v, where)
    vt = v.get("model_type")
    top_type = top.get("model_type")
    if vt is None:
        # the wrappers' default vision configs: Gemma3Config SigLIP, LlavaConfig CLIP
        vt = "siglip_vision_model" if top_type == "gemma3" else "clip_vision_model" if top_type in LLAVA_TYPES else None
    v = {**VISION_DEFAULTS.get(vt if isinstance(vt, str) else "", {}), **v}
    where_v = f"{where} (its model_type {vt!r} has no defaults here, so the key is needed)"
    h = _get(v, "hidden_size", where_v)
    layers = _get(v, "num_hidden_layers", where_v)
    inter = _get(v, "intermediate_size", where_v)
    # ViT block (CLIP, SigLIP, Llama 4): 4 h^2 attention + 2 h*inter MLP; biases, norms, patch and
    # position embeddings (under 2% of a tower: Gemma 3's SigLIP is 416.9M, this counts 411.1M)
    # and the Gemma 3 / Llama 4 projectors are left out
    total = layers * (4 * h * h + 2 * h * inter)
    if top_type in LLAVA_TYPES:
        bias = _get(top, "multimodal_projector_bias", where, kind=bool, required=False, default=True)
        total += h * text_hidden + text_hidden * text_hidden + (2 * text_hidden if bias else 0)
    return total


def _qwen2_vl_vision_params(v: dict, where: str) -> int:
    """Qwen2-VL's vision tower (vllm/model_executor/models/qwen2_vl.py Qwen2VisionTransformer),
    whose width is `embed_dim` (its `hidden_size` is the text width the merger projects into):
    per block two LayerNorms with biases, a fused qkv and an output projection with biases, and an
    MLP fc1/fc2 of embed_dim x mlp_ratio with biases; the patch merger (a LayerNorm and a
    two-layer MLP from the 2x2-merged width) and the 3D patch embedding (no bias)."""
    depth = _get(v, "depth", where)
    e = _get(v, "embed_dim", where)
    ratio = v.get("mlp_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 64:
        raise ModelConfigError(f"{where}: field 'mlp_ratio' must be a number from 0 to 64, got {_shown(ratio)}")
    inter = int(e * ratio)
    out = _get(v, "hidden_size", where, required=False, default=3584)
    block = 2 * 2 * e + 3 * e * e + 3 * e + e * e + e + e * inter + inter + inter * e + e
    merged = e * _get(v, "spatial_merge_size", where, required=False, default=2) ** 2
    merger = 2 * e + merged * merged + merged + merged * out + out
    patch = (e * _get(v, "in_channels", where, required=False, default=v.get("in_chans", 3))
             * _get(v, "temporal_patch_size", where, required=False, default=2)
             * _get(v, "patch_size", where, required=False, default=14) ** 2)
    return depth * block + merger + patch


def _qwen_vl_vision_params(v: dict, where: str) -> int:
    """Qwen2.5-VL's vision tower (vllm/model_executor/models/qwen2_5_vl.py), which gives its block
    count as `depth`: per block a fused qkv and an output projection, a gated MLP (gate, up,
    down), all with biases, and two RMSNorms; then the patch merger (a norm and a two-layer MLP
    from the 2x2-merged width into the text width) and the 3D patch embedding."""
    depth = _get(v, "depth", where, minimum=0)
    h = _get(v, "hidden_size", where, minimum=1)
    inter = _get(v, "intermediate_size", where, minimum=1)
    block = 4 * h * h + 4 * h + 3 * h * inter + 2 * inter + h + 2 * h
    merged = h * _get(v, "spatial_merge_size", where, required=False, default=2, minimum=1) ** 2
    out = _get(v, "out_hidden_size", where, required=False, default=h, minimum=1)
    merger = h + merged * merged + merged + out * merged + out
    patch = (h * _get(v, "in_chans", where, required=False, default=3, minimum=1)
             * _get(v, "temporal_patch_size", where, required=False, default=2, minimum=1)
             * _get(v, "patch_size", where, required=False, default=14, minimum=1) ** 2)
    return depth * block + merger + patch


def _ties_by_default(model_type: str) -> bool:
    # transformers' config classes differ in this default: Gemma ties the LM head to the
    # embedding unless told otherwise, Llama/Qwen/Mistral do not
    return model_type.startswith("gemma")


def _text_config(top: dict) -> dict:
    """The language model's settings, with the config class's defaults under the file's values."""
    cfg = top
    if isinstance(top.get("text_config"), dict):
        # multimodal wrappers (Gemma 3) keep the language model under text_config
        cfg = {**top["text_config"], **{k: v for k, v in top.items() if k == "quantization_config"}}
        if "torch_dtype" not in cfg and "torch_dtype" in top:
            cfg["torch_dtype"] = top["torch_dtype"]
    return {**CLASS_DEFAULTS.get(str(cfg.get("model_type", "")), {}), **cfg}


def _mla(cfg: dict, where: str) -> MLA | None:
    if cfg.get("kv_lora_rank") is None:
        return None
    sparse = "index_topk" in cfg
    if sparse:
        # vLLM 0.32 builds the indexer when the config has index_topk (deepseek_v2.py is_v32) and
        # takes its wq_b input from the query's LoRA rank
        _get(cfg, "index_topk", where)
        _get(cfg, "q_lora_rank", where)
    return MLA(kv_lora_rank=_get(cfg, "kv_lora_rank", where), qk_rope_head_dim=_get(cfg, "qk_rope_head_dim", where),
               qk_nope_head_dim=_get(cfg, "qk_nope_head_dim", where), v_head_dim=_get(cfg, "v_head_dim", where),
               q_lora_rank=_get(cfg, "q_lora_rank", where, required=False, default=None),
               index_head_dim=_get(cfg, "index_head_dim", where) if sparse else 0,
               index_n_heads=_get(cfg, "index_n_heads", where) if sparse else 0)


def _moe(cfg: dict, where: str, num_layers: int, llama4: bool = False) -> MoE | None:
    key = next((k for k in ("num_local_experts", "num_experts", "n_routed_experts") if cfg.get(k)), None)
    if key is None:
        return None
    n_experts = _get(cfg, key, where)
    per_tok = _get(cfg, "num_experts_per_tok", where)
    if per_tok > n_experts:
        raise ModelConfigError(
            f"{where}: num_experts_per_tok ({per_tok}) exceeds the {n_experts} experts ('{key}')")
    intermediate = _get(cfg, "intermediate_size", where, required=False, default=None)
    if llama4:
        # vllm/model_executor/models/llama4.py: Llama4MoE has the routed experts and one shared
        # expert, both of intermediate_size; a layer is MoE when (index + 1) is a multiple of
        # interleave_moe_layer_step, the others have a dense MLP of intermediate_size_mlp
        # (vLLM reads interleave_moe_layer_step, not transformers' moe_layers list)
        if not intermediate:
            raise ModelConfigError(f"{where}: missing required field 'intermediate_size'")
        step = _get(cfg, "interleave_moe_layer_step", where, required=False, default=1)
        if step > num_layers:
            raise ModelConfigError(
                f"{where}: interleave_moe_layer_step ({step}) exceeds num_hidden_layers ({num_layers})")
        mlp = _get(cfg, "intermediate_size_mlp", where, required=step > 1, default=0)
        return MoE(n_experts, per_tok, intermediate, intermediate, 0, mlp, layer_step=step)
    expert_inter = _get(cfg, "moe_intermediate_size", where, required=False, default=None) or intermediate
    if not expert_inter:
        raise ModelConfigError(f"{where}: MoE model needs 'moe_intermediate_size' or 'intermediate_size'")
    shared = _get(cfg, "shared_expert_intermediate_size", where, required=False, default=0, minimum=0)
    if not shared and cfg.get("model_type") == "granitemoehybrid":
        # vllm/model_executor/models/granitemoehybrid.py: a shared MLP beside the experts in every layer
        shared = _get(cfg, "shared_intermediate_size", where, required=False, default=1024, minimum=0)
    n_shared = _get(cfg, "n_shared_experts", where, required=False, default=0, minimum=0)
    if n_shared:
        shared = n_shared * expert_inter
    dense_layers = _get(cfg, "first_k_dense_replace", where, required=False, default=0, minimum=0)
    if dense_layers > num_layers:
        raise ModelConfigError(
            f"{where}: first_k_dense_replace ({dense_layers}) exceeds num_hidden_layers ({num_layers})")
    return MoE(n_experts, per_tok, expert_inter, shared, dense_layers, intermediate or 0)


# vLLM 0.32's model classes that keep a recurrent state per sequence: those whose class implements
# IsHybrid (attention plus state-space or linear-attention layers) or IsAttentionFree (no
# attention at all), vllm/model_executor/models/interfaces.py, as registered by name in
# vllm/model_executor/models/registry.py (classes under vllm/model_executor/models/ and
# vllm/models/). Their state layers get a MambaSpec
# (vllm/v1/kv_cache_interface.py): a fixed-size state per sequence, padded to the attention
# layers' page size by the hybrid allocator.
HYBRID_ARCHITECTURES = frozenset({
    "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM", "BailingMoeV3VLForConditionalGeneration",
    "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "InternS2MobiusForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration", "JambaForCausalLM", "JambaForSequenceClassification",
    "KimiLinearForCausalLM", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM", "Lfm2VlForConditionalGeneration",
    "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration", "NemotronHForCausalLM",
    "NemotronHPuzzleForCausalLM", "NemotronH_Nano_VL_V2", "NemotronH_Nano_Omni_Reasoning_V3",
    "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3", "OlmoHybridForCausalLM",
    "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "Zamba2ForCausalLM", "KimiK3ForConditionalGeneration",
    "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration", "Glm5NextForCausalLM",
    "Glm5NextForConditionalGeneration",
    # removed from vLLM before 0.32 (registry.py _PREVIOUSLY_SUPPORTED_MODELS) but still hybrid
    "BambaForCausalLM", "MiniMaxText01ForCausalLM", "MiniMaxM1ForCausalLM", "Plamo2ForCausalLM",
    "Phi4FlashForCausalLM",
})
# vLLM 0.32 model classes under vllm/models/ whose layers build KV cache specs of their own
# (compressed or sparse MLA, circular buffers, indexer caches: their get_kv_cache_spec)
MODEL_SPECIFIC_KV_ARCHITECTURES = {
    "DeepseekV4ForCausalLM": "vllm/models/deepseek_v4", "DeepseekV4ForConditionalGeneration": "vllm/models/deepseek_v4",
    "DeepseekV41ForCausalLM": "vllm/models/deepseek_v41", "MiniMaxM3SparseForCausalLM": "vllm/models/minimax_m3",
    "MiniMaxM3SparseForConditionalGeneration": "vllm/models/minimax_m3", "HYV4ForCausalLM": "vllm/models/hy_v4",
    "InklingForCausalLM": "vllm/models/inkling", "InklingForConditionalGeneration": "vllm/models/inkling",
    "Dots3NoteForCausalLM": "vllm/models/dots3_note",
}
# vLLM 0.32 registry.py _PREVIOUSLY_SUPPORTED_MODELS: architectures it refuses to load ("was
# supported in vLLM until v..."), with the last version that ran them. Mllama (Llama 3.2 Vision,
# an encoder-decoder with cross-attention layers) went with the V0 engine.
REMOVED_ARCHITECTURES = {
    "MotifForCausalLM": "0.10.2", "Phi3SmallForCausalLM": "0.9.2", "Phi4FlashForCausalLM": "0.10.2",
    "Phi4MultimodalForCausalLM": "0.12.0", "JAISLMHeadModel": "0.22.0", "ErnieModel": "0.23.0",
    "ErnieForSequenceClassification": "0.23.0", "ErnieForTokenClassification": "0.23.0",
    "InternLM2VEForCausalLM": "0.23.0", "QWenLMHeadModel": "0.23.0", "QwenVLForConditionalGeneration": "0.23.0",
    "InternLMForCausalLM": "0.23.0", "DonutForConditionalGeneration": "0.10.2",
    "MllamaForConditionalGeneration": "0.10.2", "XverseForCausalLM": "0.23.0", "Dots1ForCausalLM": "0.23.0",
    "BambaForCausalLM": "0.23.0", "MiniMaxForCausalLM": "0.23.0", "MiniMaxText01ForCausalLM": "0.23.0",
    "MiniMaxM1ForCausalLM": "0.23.0", "MiniMaxVL01ForConditionalGeneration": "0.23.0",
    "BaiChuanForCausalLM": "0.23.0", "BaichuanForCausalLM": "0.23.0", "AquilaModel": "0.24.0",
    "AquilaForCausalLM": "0.24.0", "Grok1ModelForCausalLM": "0.24.0", "Grok1ForCausalLM": "0.24.0",
    "TarsierForConditionalGeneration": "0.24.0", "Tarsier2ForConditionalGeneration": "0.23.0",
    "MantisForConditionalGeneration": "0.24.0", "MusicFlamingoForConditionalGeneration": "0.24.0",
    "AyaVisionForConditionalGeneration": "0.24.0", "TeleChatForCausalLM": "0.25.0",
    "PersimmonForCausalLM": "0.25.0", "FuyuForCausalLM": "0.25.0", "Plamo2ForCausalLM": "0.26.0",
    "OuroForCausalLM": "0.26.0", "ArcticForCausalLM": "0.28.0", "ChameleonForConditionalGeneration": "0.28.0",
    "Cheers": "0.28.0", "CheersForConditionalGeneration": "0.28.0", "Fairseq2LlamaForCausalLM": "0.28.0",
    "FireRedLIDForConditionalGeneration": "0.28.0", "GritLM": "0.28.0", "HCXVisionForCausalLM": "0.28.0",
    "MPTForCausalLM": "0.28.0", "MptForCausalLM": "0.28.0", "RWForCausalLM": "0.28.0",
    "StableLMEpochForCausalLM": "0.28.0", "PrithviGeoSpatialMAE": "0.28.0",
}
ATTENTION_FREE_ARCHITECTURES = frozenset({"MambaForCausalLM", "Mamba2ForCausalLM", "FalconMambaForCausalLM"})
# model_type values of the same families (transformers config classes), for files without 'architectures'
STATE_MODEL_TYPES = frozenset({
    "mamba", "mamba2", "falcon_mamba", "jamba", "bamba", "zamba", "zamba2", "nemotron_h", "granitemoehybrid",
    "falcon_h1", "qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "lfm2", "lfm2_moe",
    "kimi_linear", "minimax",
    "plamo2", "olmo_hybrid",
})
# fields that only state-space / linear-attention configs carry (Jamba attn_layer_period and
# mamba_*; Nemotron-H hybrid_override_pattern; Zamba2/Jamba layers_block_type; Qwen3-Next and
# Qwen3.5 full_attention_interval and linear_*; Mamba ssm_cfg / Mamba2 state_size with conv_kernel)
LINEAR_FIELDS = ("full_attention_interval", "linear_num_key_heads", "linear_num_value_heads",
                 "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim")
STATE_FIELDS = ("hybrid_override_pattern", "layers_block_type", "attn_layer_period", "attn_layer_offset",
                *LINEAR_FIELDS, "ssm_cfg", "ssm_state_size")
STATE_PREFIXES = ("mamba_", "mamba2_", "ssm_")
SUPPORTED = ("supported: transformers whose every layer is full, sliding-window or chunked-local (Llama 4) "
             "attention, MLA (DeepSeek-V2/V3, and V3.2 with its sparse-attention indexer), and the hybrids "
             "Qwen3-Next (qwen3_next) and Granite 4.0-H (granitemoehybrid)")
STATE_WHAT = ("vLLM 0.32 keeps a fixed-size recurrent state per sequence for those layers (MambaSpec, "
              "vllm/v1/kv_cache_interface.py) beside the attention KV cache, which this sizing does not model")


def _state_field(cfg: dict) -> str | None:
    for key in STATE_FIELDS:
        if cfg.get(key) not in (None, False, [], ""):
            return key
    for key in sorted(cfg):
        if isinstance(key, str) and key.startswith(STATE_PREFIXES) and cfg[key] not in (None, False, [], ""):
            return key
    if cfg.get("state_size") is not None and cfg.get("conv_kernel") is not None:
        return "state_size"
    return None


def refuse_unmodelled(top: dict, cfg: dict, where: str) -> None:
    """Refuse, by the config field that shows it, an architecture the sizing does not model,
    instead of sizing it as a plain transformer (or failing on an unrelated missing field).
    The hybrids hybrid.py sizes pass; their own fields are checked there."""
    if not is_sized(cfg, top):
        _refuse_state(top, cfg, where)
    _refuse_indexer(cfg, where)


def _refuse_state(top: dict, cfg: dict, where: str) -> None:
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list):
        named = {t for t in layer_types if isinstance(t, str)}
        odd = sorted(named - set(ATTENTION_LAYER_TYPES) - {"chunked_attention"},
                     key=lambda t: ("attention" in t and "linear" not in t, t))
        if odd:
            kind = ("Gated DeltaNet / linear-attention" if any("linear" in t for t in odd)
                    else "state-space (Mamba) or convolution")
            raise UnsupportedArchitectureError(
                f"{where}: field 'layer_types' has {', '.join(repr(t) for t in odd[:3])} layers ({kind}): "
                f"{STATE_WHAT}; {SUPPORTED}")
    for d in (cfg, top):
        key = _state_field(d)
        if key is not None:
            kind = "linear-attention (Gated DeltaNet)" if key in LINEAR_FIELDS else "state-space (Mamba)"
            raise UnsupportedArchitectureError(
                f"{where}: field '{key}' marks {kind} layers: {STATE_WHAT}; {SUPPORTED}")
    for d in (cfg, top):
        mt = d.get("model_type")
        if isinstance(mt, str) and mt in STATE_MODEL_TYPES:
            raise UnsupportedArchitectureError(
                f"{where}: field 'model_type' is '{mt}', a state-space or linear-attention hybrid: "
                f"{STATE_WHAT}; {SUPPORTED}")
    for d in (cfg, top):
        archs = d.get("architectures")
        if isinstance(archs, list):
            for a in archs:
                if not isinstance(a, str):
                    continue   # parse_config refuses a non-string entry by name
                if a in HYBRID_ARCHITECTURES or a in ATTENTION_FREE_ARCHITECTURES:
                    kind = "has no attention layers" if a in ATTENTION_FREE_ARCHITECTURES else "is a hybrid model"
                    raise UnsupportedArchitectureError(
                        f"{where}: field 'architectures' names {a}, which in vLLM 0.32 {kind}: "
                        f"{STATE_WHAT}; {SUPPORTED}")
                if a in MODEL_SPECIFIC_KV_ARCHITECTURES:
                    raise UnsupportedArchitectureError(
                        f"{where}: field 'architectures' names {a}, whose layers build KV cache specs of their own in "
                        f"vLLM 0.32 ({MODEL_SPECIFIC_KV_ARCHITECTURES[a]}: compressed or sparse attention caches) that "
                        f"this sizing does not model; {SUPPORTED}")


def _refuse_removed(top: dict, where: str) -> None:
    archs = top.get("architectures")
    if isinstance(archs, list) and archs and all(isinstance(a, str) and a in REMOVED_ARCHITECTURES for a in archs):
        a = archs[0]
        raise UnsupportedArchitectureError(
            f"{where}: field 'architectures' names {a}, which vLLM 0.32 no longer loads (supported until "
            f"v{REMOVED_ARCHITECTURES[a]}, vllm/model_executor/models/registry.py); use a model vLLM 0.32 serves")


def _refuse_indexer(cfg: dict, where: str) -> None:
    if any(key in cfg for key in ("index_topk", "index_head_dim", "index_n_heads")) and cfg.get("kv_lora_rank") is None:
        # vLLM 0.32 builds the sparse-attention indexer only beside MLA (DeepseekV32ForCausalLM,
        # GlmMoeDsaForCausalLM: vllm/models/deepseek_v32)
        key = next(k for k in ("index_topk", "index_head_dim", "index_n_heads") if k in cfg)
        raise UnsupportedArchitectureError(
            f"{where}: field '{key}' marks DeepSeek-V3.2 sparse attention, which vLLM 0.32 runs only with MLA "
            "(kv_lora_rank) and this config has none; supported: MLA with or without the V3.2 indexer")


def parse_config(cfg: Any, name: str) -> Architecture:
    """Architecture from a config.json dictionary; errors name the file and the field."""
    where = name
    if not isinstance(cfg, dict):
        raise ModelConfigError(f"{where}: config.json must be a JSON object")
    top, cfg = cfg, _text_config(cfg)
    refuse_unmodelled(top, cfg, where)
    _refuse_removed(top, where)
    hidden = _get(cfg, "hidden_size", where)
    layers = _get(cfg, "num_hidden_layers", where)
    heads = _get(cfg, "num_attention_heads", where)
    kv_heads = _get(cfg, "num_key_value_heads", where, required=False, default=heads)
    if heads % kv_heads:
        raise ModelConfigError(
            f"{where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})")
    head_dim = _get(cfg, "head_dim", where, required=False, default=None)
    if head_dim is None:
        if hidden % heads:
            raise ModelConfigError(f"{where}: no 'head_dim' and hidden_size is not a multiple of num_attention_heads")
        head_dim = hidden // heads
    vocab = _get(cfg, "vocab_size", where)
    max_pos = _get(cfg, "max_position_embeddings", where, required=False, default=4096)
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or top.get("torch_dtype") or "bfloat16"
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ModelConfigError(f"{where}: torch_dtype '{dtype}' is not one of {sorted(DTYPE_BYTES)}")

    archs = (_get(cfg, "architectures", where, kind=list, required=False, default=None)
             or _get(top, "architectures", where, kind=list, required=False, default=[]))
    if not all(isinstance(x, str) for x in archs):
        raise ModelConfigError(f"{where}: 'architectures' must list class names (strings)")
    llama4 = _is_llama4(cfg, archs)

    mla = _mla(cfg, where)
    moe = _moe(cfg, where, layers, llama4)
    if moe is not None:
        intermediate = cfg.get("intermediate_size") or moe.expert_intermediate_size
    elif cfg.get("model_type") == "granitemoehybrid":
        # granitemoehybrid.py without experts: the shared MLP is the layer's only feed-forward block
        intermediate = _get(cfg, "shared_intermediate_size", where, required=False, default=1024)
    else:
        intermediate = _get(cfg, "intermediate_size", where)
    model_type = (_get(cfg, "model_type", where, kind=str, required=False, default=None)
                  or _get(top, "model_type", where, kind=str, required=False, default=None) or "unknown")
    top_model_type = top.get("model_type")
    top_type = top_model_type if isinstance(top_model_type, str) else model_type
    max_len, max_len_why = rope.derived_max_len(cfg, max_pos, model_type, where)
    ties = _get(top, "tie_word_embeddings", where, kind=bool, required=False, default=None)
    if ties is None:
        ties = _get(cfg, "tie_word_embeddings", where, kind=bool, required=False, default=_ties_by_default(top_type))
    return Architecture(
        name=name,
        architectures=tuple(archs),
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=vocab,
        max_position_embeddings=max_pos,
        derived_max_len=max_len,
        derived_max_len_why=max_len_why,
        tie_word_embeddings=ties,
        checkpoint_dtype=dtype,
        attention_bias=_get(cfg, "attention_bias", where, kind=bool, required=False, default=model_type == "qwen2"),
        layer_windows=_layer_windows(cfg, layers, where, llama4),
        layer_chunks=_layer_chunks(cfg, layers, where) if llama4 else (),
        moe=moe,
        mla=mla,
        quantization=_quantization(top, where),
        vision_params=_vision_params(top, hidden),
        state=state_layers(cfg, where, layers),
        # qwen3_next.py Qwen3NextAttention: getattr(config, "attn_output_gate", True)
        attention_gate=(model_type == "qwen3_next"
                        and _get(cfg, "attn_output_gate", where, kind=bool, required=False, default=True)),
    )

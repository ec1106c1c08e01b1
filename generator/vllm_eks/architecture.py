"""Architecture facts of a model, read from a Hugging Face `config.json` dictionary.

Only what the memory model needs: layer count and shapes, attention kind (MHA/GQA or MLA),
which layers use a sliding window, mixture-of-experts sizes, and the checkpoint's precision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ModelConfigError

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


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3): the cache holds one compressed latent
    vector plus the rotary part per token per layer, shared by all heads."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None


@dataclass(frozen=True)
class Quantization:
    method: str  # fp8 | awq | gptq | mxfp4
    bits: float  # storage bits per quantized weight, scales included
    scope: str = "linear"  # "linear": every linear layer; "mlp": feed-forward only; "experts": MoE experts only


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
    moe: MoE | None = None
    mla: MLA | None = None
    quantization: Quantization | None = None
    vision_params: int = 0  # parameters of a vision tower loaded beside the text model

    @property
    def has_sliding_window(self) -> bool:
        return any(w is not None for w in self.layer_windows)


# Fields some config.json files leave to the transformers config class's defaults.
CLASS_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262208, "max_position_embeddings": 131072},
}


def _get(cfg: dict, key: str, where: str, kind: type = int, required: bool = True, default=None):
    if key not in cfg or cfg[key] is None:
        if required:
            raise ModelConfigError(f"{where}: missing required field '{key}'")
        return default
    value = cfg[key]
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ModelConfigError(f"{where}: field '{key}' must be a positive integer, got {value!r}")
    elif kind is bool and not isinstance(value, bool):
        raise ModelConfigError(f"{where}: field '{key}' must be true or false, got {value!r}")
    return value


def _quantization(cfg: dict, where: str) -> Quantization | None:
    q = cfg.get("quantization_config")
    if not q:
        return None
    if not isinstance(q, dict):
        raise ModelConfigError(f"{where}: 'quantization_config' must be an object")
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        return Quantization("fp8", 8.0)
    if method in ("awq", "gptq"):
        bits = q.get("bits", q.get("w_bit", 4))
        group = q.get("group_size", q.get("q_group_size", 128)) or 128
        if group <= 0:
            group = 128
        # packed weights plus one fp16 scale and one packed zero point per group
        return Quantization(method, bits + (16 + bits) / group)
    if method == "fbgemm_fp8":
        # Meta's FP8 checkpoints: feed-forward layers in FP8, attention kept in 16 bits
        return Quantization("fbgemm_fp8", 8.0, scope="mlp")
    if method == "mxfp4":
        # 4-bit values with one 8-bit shared exponent per 32 values; only the experts
        return Quantization("mxfp4", 4.25, scope="experts")
    if method == "compressed-tensors":
        fmt = str(q.get("format", "")).lower()
        if "float" in fmt or "fp8" in fmt:
            return Quantization("fp8", 8.0)
        if "pack" in fmt or "int" in fmt:
            return Quantization("gptq", 4 + 20 / 128)
    raise ModelConfigError(
        f"{where}: quantization_config.quant_method '{method}' is not supported "
        "(valid: fp8, fbgemm_fp8, awq, gptq, mxfp4, compressed-tensors)")


def _layer_windows(cfg: dict, num_layers: int, where: str) -> tuple[int | None, ...]:
    window = cfg.get("sliding_window")
    layer_types = cfg.get("layer_types")
    if layer_types:
        if not isinstance(layer_types, list) or len(layer_types) != num_layers:
            raise ModelConfigError(
                f"{where}: 'layer_types' must list one entry per layer ({num_layers})")
        if any(t == "sliding_attention" for t in layer_types) and not window:
            raise ModelConfigError(f"{where}: 'layer_types' has sliding layers but no 'sliding_window'")
        return tuple(window if t == "sliding_attention" else None for t in layer_types)
    if not window:
        return (None,) * num_layers
    if cfg.get("use_sliding_window") is False:
        return (None,) * num_layers
    pattern = cfg.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 1:
        # every pattern-th layer is global, the others slide (Gemma 2/3)
        return tuple(None if (i + 1) % pattern == 0 else window for i in range(num_layers))
    return (window,) * num_layers


def _vision_params(cfg: dict) -> int:
    v = cfg.get("vision_config")
    if not isinstance(v, dict):
        return 0
    h = v.get("hidden_size") or 0
    layers = v.get("num_hidden_layers") or 0
    inter = v.get("intermediate_size") or 0
    # ViT block: 4 h^2 attention + 2 h*inter MLP; projector into the text width ignored (small)
    return layers * (4 * h * h + 2 * h * inter)


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
    if not cfg.get("kv_lora_rank"):
        return None
    return MLA(kv_lora_rank=_get(cfg, "kv_lora_rank", where), qk_rope_head_dim=_get(cfg, "qk_rope_head_dim", where),
               qk_nope_head_dim=_get(cfg, "qk_nope_head_dim", where), v_head_dim=_get(cfg, "v_head_dim", where),
               q_lora_rank=cfg.get("q_lora_rank"))


def _moe(cfg: dict, where: str) -> MoE | None:
    n_experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts")
    if not n_experts:
        return None
    intermediate = cfg.get("intermediate_size")
    per_tok = _get(cfg, "num_experts_per_tok", where)
    expert_inter = cfg.get("moe_intermediate_size") or intermediate
    if not expert_inter:
        raise ModelConfigError(f"{where}: MoE model needs 'moe_intermediate_size' or 'intermediate_size'")
    shared = cfg.get("shared_expert_intermediate_size") or 0
    if cfg.get("n_shared_experts"):
        shared = cfg["n_shared_experts"] * expert_inter
    dense_layers = cfg.get("first_k_dense_replace") or 0
    return MoE(n_experts, per_tok, expert_inter, shared, dense_layers, intermediate or 0)


def parse_config(cfg: Any, name: str) -> Architecture:
    """Architecture from a config.json dictionary; errors name the file and the field."""
    where = name
    if not isinstance(cfg, dict):
        raise ModelConfigError(f"{where}: config.json must be a JSON object")
    top, cfg = cfg, _text_config(cfg)
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
    if dtype not in DTYPE_BYTES:
        raise ModelConfigError(f"{where}: torch_dtype '{dtype}' is not one of {sorted(DTYPE_BYTES)}")

    mla = _mla(cfg, where)
    moe = _moe(cfg, where)
    if moe is not None:
        intermediate = cfg.get("intermediate_size") or moe.expert_intermediate_size
    else:
        intermediate = _get(cfg, "intermediate_size", where)

    archs = cfg.get("architectures") or top.get("architectures") or []
    return Architecture(
        name=name,
        architectures=tuple(archs),
        model_type=str(cfg.get("model_type") or top.get("model_type") or "unknown"),
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=vocab,
        max_position_embeddings=max_pos,
        tie_word_embeddings=bool(top.get("tie_word_embeddings", cfg.get(
            "tie_word_embeddings", _ties_by_default(str(top.get("model_type") or cfg.get("model_type") or ""))))),
        checkpoint_dtype=dtype,
        attention_bias=bool(cfg.get("attention_bias", cfg.get("model_type") == "qwen2")),
        layer_windows=_layer_windows(cfg, layers, where),
        moe=moe,
        mla=mla,
        quantization=_quantization(top, where),
        vision_params=_vision_params(top),
    )

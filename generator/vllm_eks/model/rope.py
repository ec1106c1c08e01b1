"""The longest context vLLM 0.32 accepts for a model, derived from its config.json the way
vLLM derives it: max_position_embeddings (vllm/transformers_utils/model_arch_config_convertor.py
derive_max_model_len_and_key) scaled by the RoPE `factor` of the scaling types that do not
already count it in max_position_embeddings (vllm/config/model.py _get_and_verify_max_len).

transformers 5 reads a legacy `rope_scaling` block into `rope_parameters` (modeling_rope_utils.py
RotaryEmbeddingConfigMixin: `rope_scaling or rope_parameters`); vLLM then maps the legacy `type`
key to `rope_type` and the legacy names su -> longrope, mrope -> default, telechat3-yarn -> yarn
(vllm/transformers_utils/config.py patch_legacy_rope_type), and builds the rotary embedding by
`rope_type` (vllm/model_executor/layers/rotary_embedding/__init__.py get_rope, which raises
"Unknown RoPE scaling type" for any other)."""

from __future__ import annotations

import math

from vllm_eks.core.errors import ModelConfigError

# rope_type values get_rope builds (after patch_legacy_rope_type's renames)
ROPE_TYPES = ("default", "linear", "dynamic", "ntk", "yarn", "deepseek_yarn", "deepseek_llama_scaling",
              "longrope", "llama3", "mllama4", "proportional", "bailing_mrope", "openpangu")
LEGACY_NAMES = {"su": "longrope", "mrope": "default", "telechat3-yarn": "yarn"}
# _get_and_verify_max_len: these leave max_position_embeddings already scaled (transformers'
# _compute_yarn_parameters assumes so), so `factor` is not applied to it again
UNSCALED = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
# get_rope reads rope_parameters["factor"] for these ("dynamic" takes `alpha` instead)
NEEDS_FACTOR = ("linear", "ntk", "yarn", "deepseek_yarn", "deepseek_llama_scaling", "llama3")
# transformers' layer type names (configuration_utils.py ALLOWED_LAYER_TYPES): a rope_parameters
# whose keys are all among them is nested per layer type (vLLM config.py is_rope_parameters_nested)
LAYER_TYPE_KEYS = ("full_attention", "sliding_attention", "chunked_attention", "window_attention",
                   "indexed_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                   "minimax_m3_sparse", "conv", "moe", "hybrid", "hybrid_sliding", "linear_attention",
                   "sparse", "dense")
# the bound architecture.py puts on every config integer
MAX_LEN = 2**31 - 1


def _blocks(cfg: dict) -> tuple[str, list[tuple[str, dict]]]:
    """(the key the file uses, [(dotted name, one RoPE block)]); nested per layer type or one."""
    key = "rope_scaling" if cfg.get("rope_scaling") else "rope_parameters"
    params = cfg.get(key)
    if params is None or params == {}:
        return key, []
    if not isinstance(params, dict):
        raise ModelConfigError(f"field '{key}' must be an object, got {type(params).__name__}")
    if set(params) <= set(LAYER_TYPE_KEYS):   # transformers/vLLM is_rope_parameters_nested
        out = []
        for layer_type, block in params.items():
            if block is None or block == {}:
                continue
            if not isinstance(block, dict):
                raise ModelConfigError(f"field '{key}.{layer_type}' must be an object, got {type(block).__name__}")
            out.append((f"{key}.{layer_type}", block))
        return key, out
    return key, [(key, params)]


def _rope_type(name: str, block: dict) -> str:
    modern, legacy = block.get("rope_type"), block.get("type")
    for k, v in (("rope_type", modern), ("type", legacy)):
        if v is not None and not isinstance(v, str):
            raise ModelConfigError(f"field '{name}.{k}' must be a string, got {v!r}"[:200])
    if modern is not None and legacy is not None and modern != legacy and (legacy, modern) not in (
            ("su", "longrope"), ("mrope", "default")):
        # patch_legacy_rope_type raises on the conflict
        raise ModelConfigError(
            f"field '{name}.type' ({legacy!r}) conflicts with '{name}.rope_type' ({modern!r}); vLLM 0.32 "
            "refuses a config with both unless they agree: keep one")
    which = "rope_type" if modern is not None else "type"
    rope_type = modern if modern is not None else (legacy if legacy is not None else "default")
    if rope_type == "mrope" and "mrope_section" not in block:
        raise ModelConfigError(f"field '{name}.{which}' is 'mrope', which vLLM 0.32 accepts only with "
                               f"'{name}.mrope_section'")
    canonical = LEGACY_NAMES.get(rope_type, rope_type)
    if canonical not in ROPE_TYPES:
        raise ModelConfigError(
            f"field '{name}.{which}' is {rope_type!r}, a RoPE type vLLM 0.32 does not build (get_rope); valid: "
            f"{', '.join(ROPE_TYPES)} (legacy su, mrope, telechat3-yarn)"[:400])
    return canonical


def _factor(name: str, block: dict, rope_type: str) -> float | None:
    if "factor" not in block or block["factor"] is None:
        if rope_type in NEEDS_FACTOR or (rope_type == "dynamic" and "alpha" not in block):
            raise ModelConfigError(f"field '{name}.factor' is missing: vLLM 0.32 needs it for rope_type "
                                   f"{rope_type!r} (a number > 0)")
        return None
    factor = block["factor"]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) \
            or factor <= 0:
        shown = repr(factor) if not isinstance(factor, int) or abs(factor) < 10**30 else "a huge integer"
        raise ModelConfigError(f"field '{name}.factor' must be a number > 0, got {shown[:60]}")
    return float(factor)


def _check_original(name: str, block: dict) -> None:
    value = block.get("original_max_position_embeddings")
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LEN:
        shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
        raise ModelConfigError(f"field '{name}.original_max_position_embeddings' must be an integer from 1 to "
                               f"{MAX_LEN:,}, got {shown[:60]}")


def derived_max_len(cfg: dict, max_position_embeddings: int, model_type: str, where: str) -> tuple[int, str]:
    """(max_model_len vLLM 0.32 derives, how): _get_and_verify_max_len's rule. The factor of the
    last block of a scaling type (linear, dynamic, ntk, ...) multiplies max_position_embeddings;
    YaRN, LongRoPE, Llama 3 and the DeepSeek types do not (their max_position_embeddings is
    already the extended length); Gemma 3's is never multiplied ("gemma3" in model_type)."""
    try:
        key, blocks = _blocks(cfg)
        factor: float | None = None
        for name, block in blocks:
            rope_type = _rope_type(name, block)
            f = _factor(name, block, rope_type)
            _check_original(name, block)
            if rope_type not in UNSCALED and f is not None:
                factor = f
    except ModelConfigError as e:
        raise ModelConfigError(f"{where}: {e}") from None
    if factor is None or "gemma3" in model_type:
        return max_position_embeddings, "max_position_embeddings"
    scaled = max_position_embeddings * factor
    if not 1 <= scaled <= MAX_LEN:
        raise ModelConfigError(
            f"{where}: field '{key}.factor' ({factor:g}) makes max_position_embeddings {max_position_embeddings} "
            f"a context of {scaled:.4g} tokens; it must give 1 to {MAX_LEN:,} tokens")
    derived = int(scaled)   # _get_and_verify_max_len: int(derived_max_model_len)
    return derived, f"max_position_embeddings {max_position_embeddings} x {key}.factor {factor:g}"


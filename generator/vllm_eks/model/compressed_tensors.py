"""Stored bits per weight of a compressed-tensors (llm-compressor) checkpoint, read from its
`quantization_config` the way vLLM 0.32 reads it
(vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py
CompressedTensorsConfig.from_config and _get_scheme_from_parts).

Each `config_groups.<name>` gives `targets` (layer names, `re:` regexes, or module class names
such as "Linear") and `weights` (num_bits, type int/float, strategy tensor/channel/group/block,
group_size, symmetric); `ignore` lists the layers left unquantized (utils.py
should_ignore_layer: exact name or `re:` regex). What a linear layer stores:
- the values: num_bits each, packed eight 4-bit or four 8-bit values to an int32 in
  pack-quantized (the WNA16 scheme's Marlin/Machete kernels keep them packed), one byte each in
  int-quantized and float-quantized (int8 / fp8 e4m3), one int8 container per value in
  naive-quantized;
- strategy group: one 16-bit scale per group_size values (an fp8 scale for 4-bit floats,
  NVFP4/MXFP4), and with symmetric false a zero point per group (packed at num_bits in
  pack-quantized, int8 otherwise); channel, tensor and block scales are one per output row, per
  tensor or per 128 x 128 block: negligible beside the weights.
Embeddings and the LM head stay in the model dtype: vLLM applies these schemes to LinearBase
layers only."""

from __future__ import annotations

import re
from typing import Any

from vllm_eks.core.errors import ModelConfigError

FORMATS = ("pack-quantized", "int-quantized", "float-quantized", "naive-quantized",
           "nvfp4-pack-quantized", "mxfp4-pack-quantized")
INT_BITS = (4, 8)      # compressed_tensors_wNa16.py WNA16_SUPPORTED_TYPES_MAP, W8A8 int8
FLOAT_BITS = (4, 8)    # NVFP4/MXFP4, FP8
STRATEGIES = ("tensor", "channel", "group", "tensor_group", "block")
# one representative layer per class of linear layers, as the checkpoint names them
CLASSES = (
    ("attention", tuple(f"model.layers.0.self_attn.{n}" for n in ("q_proj", "k_proj", "v_proj", "o_proj"))),
    ("mlp", tuple(f"model.layers.0.mlp.{n}" for n in ("gate_proj", "up_proj", "down_proj"))),
    ("experts", tuple(f"model.layers.0.mlp.experts.0.{n}" for n in ("gate_proj", "up_proj", "down_proj"))),
)


def _err(where: str, key: str, what: str, value: Any = None) -> ModelConfigError:
    got = "" if value is None else f", got {repr(value)[:60]}"
    return ModelConfigError(f"{where}: field '{key}' {what}{got}")


def _matches(name: str, target: str, class_name: str | None = None) -> bool:
    """utils.py find_matched_target / config_utils.py is_equal_or_regex_match: the layer name
    exactly or by `re:` regex; with class_name, a target contained in the module's class name."""
    if target.startswith("re:"):
        try:
            return re.match(target[3:], name) is not None
        except re.error:
            return False
    if class_name is not None and target.lower() in class_name.lower():
        return True
    return target == name


def _strings(value: Any, where: str, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise _err(where, key, "must be a list of layer names, 're:' regexes or module class names", value)
    for t in value:
        if t.startswith("re:"):
            try:
                re.compile(t[3:])
            except re.error:
                raise _err(where, key, "holds an invalid regex", t) from None
    return value


def _group_bits(weights: dict, fmt: str, where: str, key: str) -> float:
    """Stored bits per weight of one config group's weights."""
    kind = weights.get("type", "int")
    if kind not in ("int", "float"):
        raise _err(where, f"{key}.type", "must be 'int' or 'float'", kind)
    bits = weights.get("num_bits")
    valid = INT_BITS if kind == "int" else FLOAT_BITS
    if isinstance(bits, bool) or bits not in valid:
        raise _err(where, f"{key}.num_bits", f"must be one of {list(valid)} for type {kind}", bits)
    strategy = weights.get("strategy") or ("group" if weights.get("group_size") else "tensor")
    if strategy not in STRATEGIES:
        raise _err(where, f"{key}.strategy", f"must be one of {list(STRATEGIES)}", strategy)
    symmetric = weights.get("symmetric", True)
    if not isinstance(symmetric, bool):
        raise _err(where, f"{key}.symmetric", "must be true or false", symmetric)
    value_bits = 8.0 if fmt == "naive-quantized" else float(bits)
    if strategy not in ("group", "tensor_group"):
        return value_bits
    group = weights.get("group_size")
    if isinstance(group, bool) or not isinstance(group, int) or not 1 <= group <= 2**20:
        raise _err(where, f"{key}.group_size", f"must be a positive integer with strategy {strategy}", group)
    scale_bits = 8 if kind == "float" and bits == 4 else 16
    zero_bits = 0 if symmetric else (bits if fmt == "pack-quantized" else 8)
    return value_bits + (scale_bits + zero_bits) / group


def quantization(q: dict, where: str) -> dict[str, Any]:
    """Keyword arguments of architecture.Quantization for a compressed-tensors block."""
    fmt = q.get("format", "")
    if not isinstance(fmt, str):
        raise _err(where, "format", f"must be one of {', '.join(FORMATS)}", fmt)
    fmt = fmt.lower()
    groups = q.get("config_groups")
    if not groups:
        if "float" in fmt or "fp8" in fmt:
            # a catalog subset keeps only the format: FP8 weights, one byte each
            return {"method": "fp8", "bits": 8.0}
        raise _err(where, "config_groups", "is missing: the stored bits of a compressed-tensors checkpoint are its "
                   "config_groups.*.weights (num_bits, type, strategy, group_size)")
    if not isinstance(groups, dict):
        raise _err(where, "config_groups", "must be an object of named groups", groups)
    ignore = _strings(q.get("ignore"), where, "ignore")
    resolved: list[tuple[list[str], float | None, bool]] = []   # (targets, bits, float 8-bit)
    for name, group in groups.items():
        key = f"config_groups.{name}"
        if not isinstance(group, dict):
            raise _err(where, key, "must be an object", group)
        targets = _strings(group.get("targets"), where, f"{key}.targets")
        gfmt = group.get("format") or fmt
        if not isinstance(gfmt, str) or gfmt.lower() not in FORMATS:
            field = f"{key}.format" if group.get("format") else "format"
            raise _err(where, field, f"must be one of {', '.join(FORMATS)} (the formats sized here)", gfmt)
        weights = group.get("weights")
        if weights is None:
            resolved.append((targets, None, False))
            continue
        if not isinstance(weights, dict):
            raise _err(where, f"{key}.weights", "must be an object", weights)
        stored_bits = _group_bits(weights, gfmt.lower(), where, f"{key}.weights")
        resolved.append((targets, stored_bits, weights.get("type") == "float" and weights.get("num_bits") == 8))
    per_class: list[float | None] = []
    fp8_only = True
    for kind, names in CLASSES:
        seen = set()
        for layer in names:
            layer_bits: float | None = None
            if not any(_matches(layer, t) for t in ignore):
                for targets, b, is_fp8 in resolved:
                    if any(_matches(layer, t) for t in targets) or any(_matches(layer, t, "Linear") for t in targets):
                        layer_bits = b
                        fp8_only = fp8_only and (b is None or is_fp8)
                        break
            seen.add(layer_bits)
        if len(seen) > 1:
            raise _err(where, "ignore", f"leaves some {kind} projections of a layer unquantized and quantizes others "
                       f"({', '.join(n.rsplit('.', 1)[1] for n in names)}), which this sizing does not model; "
                       "config_groups and ignore must treat a layer's "
                       f"{kind} projections alike")
        per_class.append(seen.pop())
    stored = [b for b in per_class if b is not None]
    if not stored:
        raise _err(where, "config_groups", "quantize no linear layer (their targets match no attention or MLP "
                   "projection, or ignore lists them all)")
    # FP8 compressed-tensors checkpoints keep the "fp8" label of the plan; others are named by method
    return {"method": "fp8" if fp8_only else "compressed-tensors", "bits": max(stored),
            "class_bits": (per_class[0], per_class[1], per_class[2])}

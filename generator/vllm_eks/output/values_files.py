"""The values files a scenario folder holds, in the form people fork them.

Which keys a file carries (`forkable_values`): every key the builder set from the Plan or the
options (pydantic's fields-set record: requests, limits, /dev/shm, probe budget, engine
arguments, pool limits ...), even when it equals the chart default, so every sized number is in
front of the reader; any other key only where it differs from the chart default (the values
model's default, which is what the chart's values.yaml holds); never a section the chart reads
only for another topology. Helm merges a values file over values.yaml key by key (maps deeply,
lists and scalars whole), so leaving out a key equal to its default renders the same objects.

How a file reads (`commented_yaml`): the description each key has in values.schema.json as a
comment above it, and the size in GiB beside a memory quantity that is not a whole number of
MiB (its exact value stays as written)."""

from __future__ import annotations

import math
import re
import textwrap
from typing import Any

import yaml
from pydantic import BaseModel

from vllm_eks.core.units import GIB, MIB, quantity_bytes

COMMENT_WIDTH = 100
_BINARY_QUANTITY = re.compile(r"^[0-9]+(Ki|Mi|Gi|Ti|Pi|Ei)$")


def overrides_with_null(field: Any, value: Any) -> bool:
    """A None that replaces a default which is not None (engine.gpuMemoryUtilization: null turns
    the chart's flag off): written as null, where an unset None is left out."""
    return value is None and not field.is_required() and field.get_default(call_default_factory=True) is not None


def model_values(model: BaseModel) -> dict[str, Any]:
    """The model as helm reads it: camelCase aliases, nothing unset, and a None that overrides a
    default written as null."""
    doc = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    _restore_nulls(model, doc)
    return doc


def _restore_nulls(model: BaseModel, doc: dict[str, Any]) -> None:
    for name, field in type(model).model_fields.items():
        value, key = getattr(model, name), field.alias or name
        if overrides_with_null(field, value):
            doc[key] = None
        elif isinstance(value, BaseModel) and isinstance(doc.get(key), dict):
            _restore_nulls(value, doc[key])


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return model_values(value)
    if isinstance(value, list):
        return [_dump(item) for item in value]
    if isinstance(value, dict):
        return {key: _dump(item) for key, item in value.items()}
    return value


def _keys(model: BaseModel, default: BaseModel | None) -> dict[str, Any]:
    """The keys of `model` to write: the ones the builder set always, others where they differ
    from `default`, the same part of the chart's default values. A field counts as set when the
    builder set it, not when a default factory did (then the default has it set alike); a field
    without a default is always written, so each section stays valid on its own."""
    out: dict[str, Any] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        key = field.alias or name
        if overrides_with_null(field, value):
            out[key] = None
            continue
        if value is None:
            continue
        base = getattr(default, name, None) if default is not None else None
        is_set = field.is_required() or name in model.model_fields_set and not (
            default is not None and name in default.model_fields_set and _dump(value) == _dump(base))
        if isinstance(value, BaseModel):
            sub = _keys(value, base if isinstance(base, BaseModel) else None)
            if sub:
                out[key] = sub
        elif is_set or _dump(value) != _dump(base):
            out[key] = _dump(value)
    return out


def forkable_values(model: BaseModel, topology: str, foreign: dict[str, frozenset[str]]) -> dict[str, Any]:
    """The keys of a chart's values to write (module docstring); `foreign` maps a dotted key
    path to the topologies that read it, and the path is left out for every other topology."""
    doc = _keys(model, type(model).model_construct())
    for path, topologies in foreign.items():
        if topology in topologies:
            continue
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return doc


# ------------------------------------------------------------------------------------------
# YAML with comments


def _scalar(value: Any) -> str:
    """One scalar (or empty collection) as PyYAML writes it inline."""
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf, allow_unicode=True)
    return text.removesuffix("\n...\n").rstrip("\n")


def _child_schema(schema: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if not schema:
        return None
    for branch in (schema, *schema.get("anyOf", ())):
        if key in branch.get("properties", {}):
            return branch["properties"][key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def _item_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if not schema:
        return None
    for branch in (schema, *schema.get("anyOf", ())):
        if isinstance(branch.get("items"), dict):
            return branch["items"]
    return None


def human_size(value: Any) -> str | None:
    """GiB of a binary memory quantity that is not a whole number of MiB ("24.96 GiB"), else None."""
    if not isinstance(value, str) or not _BINARY_QUANTITY.match(value):
        return None
    n = quantity_bytes(value)
    return None if n % MIB == 0 else f"{n / GIB:.2f} GiB"


def _comment(schema: dict[str, Any] | None, indent: str) -> list[str]:
    text = " ".join((schema or {}).get("description", "").split())
    if not text:
        return []
    return textwrap.wrap(text, width=COMMENT_WIDTH, initial_indent=f"{indent}# ",
                         subsequent_indent=f"{indent}# ", break_long_words=False, break_on_hyphens=False)


def _mapping(doc: dict[str, Any], schema: dict[str, Any] | None, depth: int) -> list[str]:
    indent = "  " * depth
    lines: list[str] = []
    for key, value in doc.items():
        sub = _child_schema(schema, key)
        lines += _comment(sub, indent)
        head = f"{indent}{_scalar(key)}:"
        if isinstance(value, dict) and value:
            lines.append(head)
            lines += _mapping(value, sub, depth + 1)
        elif isinstance(value, list) and value:
            lines.append(head)
            lines += _sequence(value, _item_schema(sub), depth + 1)
        else:
            size = human_size(value)
            lines.append(f"{head} {_scalar(value)}" + (f"  # {size}" if size else ""))
    return lines


def _sequence(items: list[Any], schema: dict[str, Any] | None, depth: int) -> list[str]:
    indent = "  " * depth
    lines: list[str] = []
    for item in items:
        if isinstance(item, dict) and item:
            body = _mapping(item, schema, depth + 1)
            # the first key goes on the dash line; comments above it stay above
            first = next(i for i, line in enumerate(body) if not line.lstrip().startswith("#"))
            body[first] = f"{indent}- {body[first].lstrip()}"
            lines += body
        else:
            lines.append(f"{indent}- {_scalar(item)}")
    return lines


def commented_yaml(doc: dict[str, Any], schema: dict[str, Any]) -> str:
    """`doc` as block YAML with each key's schema description as a comment above it."""
    return "\n".join(_mapping(doc, schema, 0)) + "\n" if doc else "{}\n"

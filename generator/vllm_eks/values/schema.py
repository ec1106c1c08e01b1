"""A chart's values.schema.json from its pydantic values model.

Helm validates values against the chart's values.schema.json with a JSON-Schema validator that
speaks draft-07 (Helm 3) or newer drafts (Helm 4). Pydantic emits 2020-12 flavoured schemas
with `$defs`/`$ref`; this module rewrites them into a self-contained draft-07 document: every
`$ref` inlined, `additionalProperties: false` on every object with declared properties, field
descriptions kept, pydantic's generated titles dropped (they only repeat the key).

Fields that are optional in Python (default None) are written as "may be omitted", not "may be
null": values files leave them out, and a null in a values file means "delete the default" to
Helm rather than a value; an optional field whose default is not None (null turns the default
off) may be omitted or null. Every other key of the chart's own values (outside list items, which
users write partially) is required, so a user's `model: null`, which deletes the default, is
reported as the missing key it is instead of failing later inside a template."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

DRAFT_07 = "http://json-schema.org/draft-07/schema#"


class SchemaError(Exception):
    """The pydantic model cannot be expressed as a self-contained draft-07 schema."""


def _resolve(ref: str, defs: dict[str, Any]) -> dict[str, Any]:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix):] not in defs:
        raise SchemaError(f"unsupported $ref {ref!r}: only local $defs can be inlined")
    return defs[ref[len(prefix):]]


def _inline(node: Any, defs: dict[str, Any], stack: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, stack) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    # pydantic < 2.9 wraps a described $ref in allOf: [{"$ref": ...}]
    if "allOf" in node and len(node["allOf"]) == 1 and set(node["allOf"][0]) == {"$ref"}:
        node["$ref"] = node.pop("allOf")[0]["$ref"]
    if "$ref" in node:
        ref = node.pop("$ref")
        if ref in stack:
            raise SchemaError(f"recursive model at {ref!r} cannot be inlined")
        target = _inline(_resolve(ref, defs), defs, stack + (ref,))
        # Keywords written beside the $ref (description, default) describe this use: they win.
        node = {**target, **node}
    return {key: _inline(value, defs, stack) for key, value in node.items()}


_OMITTABLE = "x-omittable"  # marks, while tidying, a property whose Python default is None


def _tidy(node: Any, in_properties: bool = False, in_items: bool = False) -> Any:
    if isinstance(node, list):
        return [_tidy(item, in_items=in_items) for item in node]
    if not isinstance(node, dict):
        return node
    if in_properties:
        # keys of "properties" are field names, not schema keywords
        return {name: _tidy(sub, in_items=in_items) for name, sub in node.items()}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        nested_in_items = in_items or key in ("items", "additionalProperties")
        out[key] = _tidy(value, in_properties=(key == "properties"), in_items=nested_in_items)
    # Optional[X] = None  ->  X, omitted when unset (see module docstring).
    any_of = out.get("anyOf")
    tidied_branch = False
    if isinstance(any_of, list) and {"type": "null"} in any_of and out.get("default", 0) is None:
        rest = [branch for branch in any_of if branch != {"type": "null"}]
        out.pop("default")
        if len(rest) == 1:
            out.pop("anyOf")
            # The branch was tidied with the anyOf: its own omittable properties are settled
            # (tidying them again would find no marks left and require every one).
            out = {**rest[0], **out}
            tidied_branch = True
        else:
            out["anyOf"] = rest
        out[_OMITTABLE] = True
    elif isinstance(any_of, list) and {"type": "null"} in any_of:
        # X | None with a default that is not None: null turns the default off, and Helm
        # deletes a key set to null, so the key may be omitted (the null branch stays, for
        # values files validated on their own).
        out[_OMITTABLE] = True
    if "properties" in out and not tidied_branch:
        out.setdefault("type", "object")
        # closed, unless the model keeps unknown keys on purpose (a Kubernetes object passed on)
        if out.get("additionalProperties") is not True:
            out["additionalProperties"] = False
        omittable = {name for name, sub in out["properties"].items() if sub.pop(_OMITTABLE, False)}
        if not in_items:
            required = set(out.get("required", [])) | (set(out["properties"]) - omittable)
            if required:
                out["required"] = sorted(required)
    return out


def _check(node: Any, path: str) -> None:
    """Every declared property carries a description; no $ref or $defs survive."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check(item, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    if "$ref" in node or "$defs" in node:
        raise SchemaError(f"{path}: $ref left after inlining")
    for name, sub in node.get("properties", {}).items():
        if not sub.get("description"):
            raise SchemaError(f"{path}.{name}: field has no description")
        _check(sub, f"{path}.{name}")
    for key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties"):
        if key in node:
            _check(node[key], f"{path}{'' if key == 'items' else '.' + key}")


def values_schema(model: type[BaseModel], title: str) -> dict[str, Any]:
    """Self-contained draft-07 schema of `model`'s values, keyed by alias (camelCase)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema = _tidy(_inline(raw, defs, ()))
    _check(schema, "values")
    return {"$schema": DRAFT_07, "title": title, **schema}


def render_schema(model: type[BaseModel], title: str) -> str:
    """The text written to values.schema.json (stable key order, trailing newline)."""
    return json.dumps(values_schema(model, title), indent=2) + "\n"


# --------------------------------------------------------------------------------------------
# Values reference (the table in each chart's README), generated from the schema.

DOCS_START = "<!-- values-reference:start (generated by `make docs`, do not edit) -->"
DOCS_END = "<!-- values-reference:end -->"


def _type_of(node: dict[str, Any]) -> str:
    if "anyOf" in node:
        return " or ".join(_type_of(branch) for branch in node["anyOf"])
    kind = node.get("type", "any")
    if kind == "array":
        return f"list of {_type_of(node.get('items', {}))}"
    return str(kind)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_text(defaults: Any, path: list[str]) -> str:
    node = defaults
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return "unset"
        node = node[key]
    return f"`{json.dumps(node)}`"


def _rows(node: dict[str, Any], path: list[str], defaults: Any, out: list[str]) -> None:
    for name, sub in node.get("properties", {}).items():
        here = path + [name]
        desc = sub.get("description", "")
        if "enum" in sub:
            desc += " (one of: " + ", ".join(f"`{v}`" for v in sub["enum"]) + ")"
        if "pattern" in sub:
            desc += f" (pattern `{sub['pattern']}`)"
        key = ".".join(here)
        if "properties" in sub:
            # A group of keys: its own row, then one row per key.
            out.append(f"| `{key}` | object | | {_cell(desc)} |")
            _rows(sub, here, defaults, out)
            continue
        out.append(f"| `{key}` | {_type_of(sub)} | {_cell(_default_text(defaults, here))} | {_cell(desc)} |")
        items = sub.get("items", {})
        if "properties" in items:
            for item_name, item in items["properties"].items():
                item_desc = item.get("description", "")
                out.append(f"| `{key}[].{item_name}` | {_type_of(item)} | | {_cell(item_desc)} |")


def values_reference_markdown(schema: dict[str, Any], defaults: dict[str, Any]) -> str:
    """A Markdown table of every key: type, default (from the chart's values.yaml), description."""
    out = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    _rows(schema, [], defaults, out)
    return "\n".join(out) + "\n"


def replace_reference(readme: str, table: str) -> str:
    """README text with the generated section replaced (markers must exist once each)."""
    if readme.count(DOCS_START) != 1 or readme.count(DOCS_END) != 1:
        raise SchemaError("README needs exactly one values-reference start and end marker")
    head, rest = readme.split(DOCS_START)
    _, tail = rest.split(DOCS_END)
    return f"{head}{DOCS_START}\n{table}{DOCS_END}{tail}"

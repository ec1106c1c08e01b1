"""Errors raised by the schema validators, with messages that name the object and the field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match


def describe(obj: Any) -> str:
    """'Kind/name' (with namespace when set) for messages."""
    if not isinstance(obj, dict):
        return f"<{type(obj).__name__}>"
    found = obj.get("metadata")
    meta = found if isinstance(found, dict) else {}
    name = meta.get("name", "<no name>")
    ns = meta.get("namespace")
    return f"{obj.get('kind', '<no kind>')}/{name}" + (f" (namespace {ns})" if ns else "")


class SchemaError(ValueError):
    """An object failed validation; `problems` lists every failure as 'path: message'."""

    def __init__(self, obj: Any, against: str, problems: Iterable[str]) -> None:
        self.obj = obj
        self.against = against
        self.problems = list(problems)
        self.kind = obj.get("kind") if isinstance(obj, dict) else None
        self.api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{describe(obj)} [{self.api_version}] is invalid against {against}:\n{lines}"
        )


class NoSchemaError(SchemaError):
    """Neither a built-in schema nor a loaded CRD describes the object's apiVersion/kind."""


def json_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_error(err: jsonschema.ValidationError) -> str:
    """One line 'path: message', naming unknown fields the way kubectl does."""
    path = list(err.absolute_path)
    if err.validator == "additionalProperties" and err.validator_value is False and isinstance(err.instance, dict):
        known = set((err.schema.get("properties") or {}).keys())
        extra = sorted(str(k) for k in err.instance if k not in known)
        return "; ".join(f"{json_path([*path, k])}: unknown field" for k in extra)
    if err.validator in ("oneOf", "anyOf") and err.context:
        # Prefer a branch of the right type that failed on its constraint (e.g. the quantity
        # pattern) over the branches that failed only on type.
        typed = [e for e in err.context if e.validator != "type"]
        closest = best_match(typed or err.context)
        return (f"{json_path(path)}: {_short(err.instance)} matches none of the allowed forms "
                f"(closest: {json_path(list(closest.absolute_path))}: {_message(closest)})")
    return f"{json_path(path)}: {_message(err)}"


def _message(err: jsonschema.ValidationError) -> str:
    # jsonschema embeds the instance's repr in its messages; a whole pod spec helps nobody.
    msg = err.message
    return msg if len(msg) <= 300 else msg[:297] + "..."


def collect(validator: Any, obj: Any) -> list[str]:
    """Every validation error of obj, formatted and sorted by path."""
    errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    return [format_error(e) for e in errors]

"""Reading JSON the user hands in (config.json, bench result files, plan.json): text that is
not UTF-8, NaN or Infinity (Python's json accepts them, JSON does not) and integers no float
holds are refused by where they are, so nothing downstream meets an OverflowError or prints a
non-finite number."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

# Largest integer a float holds exactly (2**53): sizes, counts and token totals stay far below it.
MAX_JSON_INT = 2**53


class JsonInputError(ValueError):
    """One line: why the text is not the JSON wanted (the caller adds the file or flag)."""


def _refuse_constant(name: str) -> Any:
    raise JsonInputError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _where(path: list[str]) -> str:
    return "".join(f"[{p}]" if p.isdigit() else (f".{p}" if i else p) for i, p in enumerate(path)) or "(top level)"


def out_of_range(doc: Any, path: list[str] | None = None) -> str | None:
    """The key path of the first number in `doc` that is not finite or an integer beyond
    MAX_JSON_INT, with what is wrong; None when every number is in range."""
    path = path or []
    if isinstance(doc, bool):
        return None
    if isinstance(doc, int) and abs(doc) > MAX_JSON_INT:
        return (f"key '{_where(path)}': integer of {len(str(abs(doc)))} digits is out of range "
                f"(valid: at most 2**53 = {MAX_JSON_INT:,})")
    if isinstance(doc, float) and not math.isfinite(doc):
        return f"key '{_where(path)}': {doc} is not a finite number"
    if isinstance(doc, dict):
        items: Any = doc.items()
    elif isinstance(doc, list):
        items = ((str(i), v) for i, v in enumerate(doc))
    else:
        return None
    for key, value in items:
        found = out_of_range(value, [*path, str(key)])
        if found:
            return found
    return None


def parse_json(text: str) -> Any:
    """Decoded JSON; JsonInputError for NaN/Infinity, out-of-range numbers and bad syntax."""
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise JsonInputError(f"not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise JsonInputError("JSON nested too deeply") from None
    except ValueError as e:  # Python's limit on the digits of one integer
        if isinstance(e, JsonInputError):
            raise
        raise JsonInputError(f"a number out of range ({str(e).splitlines()[0]})") from None
    found = out_of_range(doc)
    if found:
        raise JsonInputError(found)
    return doc


def read_json(path: Path) -> Any:
    """The JSON document of a file; OSError as raised, JsonInputError for anything else."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonInputError(f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                             "JSON files are UTF-8") from None
    return parse_json(text)

"""Which values keys a chart's templates read, against the keys its values.schema.json defines.

A template reads a key by its path: `.Values.a.b` (also `$.Values.a.b`), `index .Values "a" "b"`,
or through a variable bound to part of the values (`$x := .Values.a`, then `$x.b` reads a.b).
Reading a path uses it, its ancestors, and its whole subtree: the object read may be handed to
`toYaml`, a helper or a `range`, which read inside it without naming `.Values` again. A schema key
is unread when neither it nor any ancestor below the root is read; a read path is unknown when the
schema has no such key (below a free-form map or list any path is allowed; below a scalar none)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"\$?\.Values((?:\.{_NAME})+)")
_INDEX = re.compile(r"index\s+\$?\.Values((?:\s+\"[^\"]+\")+)")


@dataclass(frozen=True)
class Read:
    path: tuple[str, ...]
    where: str  # file:line


def template_files(chart_dir: Path) -> list[Path]:
    return sorted(p for p in (chart_dir / "templates").rglob("*") if p.is_file())


_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.S)
# `$x := ` / `$x = ` (also `range $k, $v := `) right before a values path: a binding, whose uses count
_BOUND_HERE = re.compile(r"\$\w+\s*:?=\s*\(?\s*$")
_ASSIGN = re.compile(rf"(\${_NAME})\s*:?=\s*\(?\s*(.{{0,200}})")


def _strip_comments(text: str) -> str:
    """Template comments blanked (their newlines kept, so line numbers stay)."""
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _bound_path(rhs: str) -> tuple[str, ...] | None:
    """The values path a variable is bound to by `$x := <rhs>`, or None when it is no values path."""
    m = re.match(rf"\$?\.Values((?:\.{_NAME})*)(?![.\w])", rhs)
    if m:
        return tuple(m.group(1).split(".")[1:])
    m = re.match(r"index\s+\$?\.Values((?:\s+\"[^\"]+\")+)", rhs)
    if m:
        return tuple(re.findall(r"\"([^\"]+)\"", m.group(1)))
    return None


def reads(text: str, where: str) -> list[Read]:
    """Every values path one template file reads. A variable holds the values path of its latest
    assignment above the use (`$x := .Values.a`); any other assignment unbinds it."""
    text = _strip_comments(text)
    assigns = [(m.start(), m.group(1), _bound_path(m.group(2))) for m in _ASSIGN.finditer(text)]
    out: list[Read] = []
    offset = 0
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        at = f"{where}:{n}"
        for m in _DOTTED.finditer(line):
            if not _BOUND_HERE.search(line[:m.start()]):
                out.append(Read(tuple(m.group(1).split(".")[1:]), at))
        for m in _INDEX.finditer(line):
            if not _BOUND_HERE.search(line[:m.start()]):
                out.append(Read(tuple(re.findall(r"\"([^\"]+)\"", m.group(1))), at))
        # uses of a bound variable: `$x.b`, `index $x "b"`, or `$x` itself (toYaml $x, a helper's argument)
        for m in re.finditer(rf"(?:index\s+)?(\${_NAME})((?:\.{_NAME})+|(?:\s+\"[^\"]+\")+)?(?![\w.])", line):
            if re.match(r"\s*(?:,\s*\$\w+\s*)?:?=", line[m.end():]):
                continue  # the variable being assigned, not read
            pos = offset + m.start(1)
            bound = None
            for a_pos, var, path in assigns:
                if a_pos >= pos:
                    break
                if var == m.group(1):
                    bound = path
            if bound is None:
                continue
            tail = m.group(2) or ""
            keys = tuple(tail.split(".")[1:]) if tail.startswith(".") else (
                tuple(re.findall(r"\"([^\"]+)\"", tail)) if m.group(0).startswith("index") else ())
            out.append(Read(bound + keys, at))
        offset += len(line)
    return out


def schema_keys(schema: dict[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], dict[str, Any]]:
    """path -> schema node of every declared key (not inside list items or free-form maps)."""
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for name, sub in schema.get("properties", {}).items():
        path = prefix + (name,)
        out[path] = sub
        out.update(schema_keys(sub, path))
    return out


def _known(schema: dict[str, Any], path: tuple[str, ...]) -> bool:
    node = schema
    for key in path:
        props = node.get("properties")
        if props is not None and key in props:
            node = props[key]
            continue
        if props is not None and node.get("additionalProperties") is False:
            return False
        # a free-form map (or a node without declared keys) takes any key below it; a scalar none
        kinds = node.get("type")
        kinds = {kinds} if isinstance(kinds, str) else set(kinds or [])
        return not kinds or bool(kinds & {"object", "array"}) or "anyOf" in node
    return True


@dataclass
class Findings:
    unread: list[str]  # schema keys no template reads
    unknown: dict[str, list[str]]  # read path -> where, for paths the schema lacks


def check_chart(chart_dir: Path) -> Findings:
    schema = json.loads((chart_dir / "values.schema.json").read_text())
    all_reads: list[Read] = []
    for f in template_files(chart_dir):
        all_reads += reads(f.read_text(), str(f.relative_to(chart_dir)))
    read_paths = {r.path for r in all_reads if r.path}
    unread = []
    for path in schema_keys(schema):
        covered = any(path[:i] in read_paths for i in range(1, len(path) + 1))
        below = any(p[:len(path)] == path for p in read_paths)
        if not covered and not below:
            unread.append(".".join(path))
    unknown: dict[str, list[str]] = {}
    for r in all_reads:
        if r.path and not _known(schema, r.path):
            unknown.setdefault(".".join(r.path), []).append(r.where)
    return Findings(sorted(unread), unknown)


def load_exceptions(path: Path) -> dict[tuple[str, str, str], str]:
    """(chart, kind, key) -> reason, from a YAML list of {chart, kind: unread|unknown, key, reason}."""
    out: dict[tuple[str, str, str], str] = {}
    for entry in yaml.safe_load(path.read_text()) or []:
        if set(entry) != {"chart", "kind", "key", "reason"} or entry["kind"] not in ("unread", "unknown") \
                or not str(entry["reason"]).strip():
            raise ValueError(f"{path}: each exception needs chart, kind (unread/unknown), key and a reason: {entry}")
        out[(entry["chart"], entry["kind"], entry["key"])] = entry["reason"]
    return out

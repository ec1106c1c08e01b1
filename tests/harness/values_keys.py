"""Which values keys a chart's templates read, against the keys its values.schema.json defines.

A template reads a key by its path: `.Values.a.b` (also `$.Values.a.b`, `.ctx.Values.a.b`),
`index .Values "a" "b"`, `get .Values.a "b"`, or through what holds part of the values: a variable
(`$x := .Values.a`, then `$x.b` reads a.b), the dot of a `with` or `range` block (`with .Values.a`,
then `.b` reads a.b), or a helper's argument (`include "h" .Values.a`, or the common
`include "h" (dict "image" .Values.image ...)`: the `define "h"` is followed, and `.b` or `.image.b`
there read a.b or image.b).

Reading a path reads it and its ancestors, not its subtree. The subtree is read too only when
  - the object is handed whole: to `toYaml`/`toJson` (and their kin), `range`, `merge`/`deepCopy`/
    `omit`/`keys`/`values`, indexed by a key that is no literal (`index $m $k`: any key), or to a
    helper that cannot be followed (a helper name not written out, or no `define` of it);
  - or the object is a Kubernetes pass-through: a schema node that takes keys it does not declare
    (an object without `additionalProperties: false`, e.g. a KubernetesObject model, or a free-form
    map; list items are never schema keys). The chart hands such an object to the API server as
    written, so the keys the model declares in it are read with it.
A schema key is unread when neither it nor any key below it is read and no ancestor covers it by
those two rules. A read path is unknown when the schema has no such key (below a free-form map or
list any path is allowed; below a scalar none).

`python -m tests.harness.values_keys` prints, per chart, the keys that pass only through an
ancestor: under the former rule (any read of an ancestor covered its subtree) and under these rules."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# what reads all of the object handed to it
_WHOLE_FUNCS = ("toYaml", "toJson", "toPrettyJson", "toRawJson", "mustToJson", "mustToPrettyJson", "mustToRawJson",
                "deepCopy", "mustDeepCopy", "merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite", "omit",
                "keys", "values", "range")
_WHOLE_BEFORE = re.compile(rf"\b(?:{'|'.join(_WHOLE_FUNCS)})\s+(?:\(\s*)?$")
# merge's arguments are all merged, whichever place they stand in
_MERGED_IN = re.compile(r"\b(?:merge|mergeOverwrite|mustMerge|mustMergeOverwrite)\s[^|()]*(?:\([^()]*\)[^|()]*)*$")
_WHOLE_AFTER = re.compile(rf"^\s*\|\s*(?:{'|'.join(_WHOLE_FUNCS)})\b")
_KEYS_BEFORE = re.compile(r"\b(?:index|get|hasKey)\s+\(?\s*$")
_ACTION = re.compile(r"\{\{-?(.*?)-?\}\}", re.S)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`')
_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.S)
_TERM = re.compile(rf"\$(?:{_NAME})?(?:\.{_NAME})*|(?<![\w.)\]])\.(?:{_NAME}(?:\.{_NAME})*)?(?![\w(])")
_ASSIGN = re.compile(rf"\s*(?:(?:range|with|if)\s+)?(?:\${_NAME}\s*,\s*)?\$({_NAME})\s*:?=\s*")
_DEFINE = re.compile(r'\{\{-?\s*define\s+"([^"]+)"\s*-?\}\}')
_BLOCKS = ("if", "with", "range", "block", "define")


@dataclass(frozen=True)
class Read:
    path: tuple[str, ...]
    where: str  # file:line
    whole: bool = False  # handed whole (toYaml, range, ...): its subtree is read too


class _Root:
    """The top-level context (a template's `.`, `$`): its `.Values` is the values root."""

    def __repr__(self) -> str:
        return "ROOT"


_ROOT = _Root()
# What a term holds: the root context, a values path (a tuple), a `dict "k" <value> ...` argument
# (a dict), or nothing known (None).
Value = Any


def template_files(chart_dir: Path) -> list[Path]:
    return sorted(p for p in (chart_dir / "templates").rglob("*") if p.is_file())


def _strip_comments(text: str) -> str:
    """Template comments blanked (their newlines kept, so line numbers stay)."""
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _child(value: Value, names: list[str]) -> Value:
    for name in names:
        if isinstance(value, tuple):
            value = value + (name,)
        elif isinstance(value, dict):
            value = value.get(name)
        elif value is _ROOT:
            value = () if name == "Values" else None
        else:
            return None
    return value


def _paths_in(value: Value) -> list[tuple[str, ...]]:
    if isinstance(value, tuple):
        return [value] if value else []
    if isinstance(value, dict):
        return [p for v in value.values() for p in _paths_in(v)]
    return []


def _closing(s: str, start: int) -> int:
    """Index of the parenthesis that closes the one at start."""
    depth = 0
    for i in range(start, len(s)):
        depth += {"(": 1, ")": -1}.get(s[i], 0)
        if depth == 0:
            return i
    return len(s)


class _Scanner:
    """Reads of a chart's templates; helpers are followed through their arguments."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.defines: dict[str, tuple[str, str, int]] = {}  # name -> (file, text from the define, first line)
        for name, text in files.items():
            for m in _DEFINE.finditer(text):
                self.defines[m.group(1)] = (name, text[m.end():], text.count("\n", 0, m.end()) + 1)
        self.out: list[Read] = []
        self.followed: set[tuple[str, str]] = set()

    def term(self, raw: str, blank: str, start: int, dot: Value, env: dict[str, Value]) -> tuple[Value, int]:
        """Value of the term at `start` (`.a.b`, `$x.a`, `$`, `.`, `(dict "k" v ...)`) and its end."""
        m = _TERM.match(blank, start)
        if m:
            text = m.group(0)
            names = [n for n in re.split(r"\.", text[1:] if text.startswith(".") else text) if n]
            if "Values" in names:  # .Values.a, $.Values.a, .ctx.Values.a, $root.Values.a
                return tuple(names[names.index("Values") + 1:]), m.end()
            if text.startswith("$"):
                var, names = (names[0][1:], names[1:]) if names else ("", [])
                return _child(env.get(var), names), m.end()
            return _child(dot, names), m.end()
        d = re.compile(r"\(\s*dict\b").match(blank, start)
        if not d:
            return None, start
        end = _closing(blank, start)
        return self.dict_value(raw[d.end():end], blank[d.end():end], dot, env), end + 1

    def dict_value(self, raw: str, blank: str, dot: Value, env: dict[str, Value]) -> dict[str, Value]:
        out: dict[str, Value] = {}
        pos = 0
        while True:
            k = re.compile(r'\s*"([^"]*)"\s+').match(raw, pos)
            if not k:
                return out
            value, end = self.term(raw, blank, k.end(), dot, env)
            out[k.group(1)] = value
            if end == k.end():  # a literal or call: skip one token or parenthesised group
                if blank[end:end + 1] == "(":
                    end = _closing(blank, end) + 1
                else:
                    t = re.compile(r'"[^"]*"|\S+').match(raw, end)
                    end = t.end() if t else len(raw)
            pos = end

    def follow(self, name: str | None, arg: Value, where: str) -> None:
        """`include name arg`: the define's reads through arg; a helper not found reads arg whole."""
        if not _paths_in(arg):
            return
        if name not in self.defines:
            self.out += [Read(p, where, whole=True) for p in _paths_in(arg)]
            return
        if (name, repr(arg)) in self.followed:
            return
        self.followed.add((name, repr(arg)))
        file, text, line = self.defines[name]
        self.scan(text, file, line, arg, helper=True)

    def scan(self, text: str, file: str, first_line: int, dot: Value, helper: bool = False) -> None:
        """The reads of a template text whose dot is `dot`. helper: a define body followed for its
        argument, up to its `end`; its `.Values` reads are counted where the file itself is scanned."""
        env: dict[str, Value] = {"": dot}
        stack: list[Value] = []
        for act in _ACTION.finditer(text):
            raw = act.group(1)
            blank = _STRING.sub(lambda s: '"' + " " * (len(s.group(0)) - 2) + '"', raw)
            where = f"{file}:{first_line + text.count(chr(10), 0, act.start())}"
            word = (blank.split() or [""])[0]
            if word == "end":
                if not stack and helper:
                    return
                dot = stack.pop() if stack else dot
                continue
            if word == "define":
                stack.append(dot)
                dot = None  # scanned for its argument where it is called
                continue
            assign = _ASSIGN.match(blank)
            rhs = assign.end() if assign else -1
            new_dot = None if word == "range" else dot
            for m in _TERM.finditer(blank, rhs if assign else 0):
                value, end = self.term(raw, blank, m.start(), dot, env)
                names = m.group(0).split(".")
                if helper and "Values" in names:
                    continue
                before = blank[:m.start()]
                dynamic = False
                if isinstance(value, tuple) and _KEYS_BEFORE.search(before):
                    keys = re.match(r'(?:\s+"[^"]*")*', raw[end:]).group(0)
                    value = value + tuple(re.findall(r'"([^"]*)"', keys))
                    # a key that is no literal (index $m $k) may be any key: the object is read whole
                    dynamic = bool(re.match(r"\s+[$.(]", raw[end + len(keys):]))
                if m.start() == rhs or (assign and re.fullmatch(r"\(\s*", blank[rhs:m.start()])):
                    env[assign.group(1)] = value  # $x := <term>: a use of $x reads through it
                    if word == "range" and isinstance(value, tuple):
                        new_dot = value
                        if value:
                            self.out.append(Read(value, where, whole=True))
                    continue
                if not isinstance(value, tuple) or not value:
                    continue
                inc = re.search(r'\binclude\s+(?:"([^"]*)"|\([^()]*\)|[^\s()]+)\s+$', raw[:m.start()])
                if inc:
                    self.follow(inc.group(1), value, where)
                elif re.search(r'\binclude\s+"[^"]*"\s+\(\s*dict\s[^()]*$', before):
                    pass  # followed with its dict below
                elif (dynamic or _WHOLE_BEFORE.search(before) or _MERGED_IN.search(before)
                      or _WHOLE_AFTER.match(blank[end:])):
                    self.out.append(Read(value, where, whole=True))
                else:
                    self.out.append(Read(value, where))
                if word in ("with", "range") and before.strip() == word:
                    new_dot = value
            for inc in re.finditer(r'\binclude\s+"([^"]*)"\s+(?=\(\s*dict\b)', raw):
                self.follow(inc.group(1), self.term(raw, blank, inc.end(), dot, env)[0], where)
            if assign and re.match(r"\(?\s*dict\b", blank[rhs:]):
                env[assign.group(1)] = (self.term(raw, blank, rhs, dot, env)[0] if blank[rhs] == "(" else
                                        self.dict_value(raw[rhs + 4:], blank[rhs + 4:], dot, env))
            elif assign and not _TERM.match(blank, rhs) and not re.match(r"\(\s*[.$]", blank[rhs:]):
                env[assign.group(1)] = None  # bound to something else: no longer a values path
            if word in _BLOCKS:
                stack.append(dot)
                dot = new_dot if word in ("with", "range") else dot


def reads(text: str, where: str) -> list[Read]:
    """Every values path one template file reads (helpers defined in the same text are followed)."""
    scanner = _Scanner({where: _strip_comments(text)})
    scanner.scan(scanner.files[where], where, 1, _ROOT)
    return scanner.out


def chart_reads(chart_dir: Path) -> list[Read]:
    """Every values path a chart's templates read, helpers followed across files."""
    files = {str(f.relative_to(chart_dir)): _strip_comments(f.read_text()) for f in template_files(chart_dir)}
    scanner = _Scanner(files)
    for name, text in files.items():
        scanner.scan(text, name, 1, _ROOT)
    return scanner.out


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


def _passed_through(node: dict[str, Any]) -> bool:
    """A Kubernetes pass-through: an object that takes keys it does not declare, or a list."""
    kinds = node.get("type")
    kinds = {kinds} if isinstance(kinds, str) else set(kinds or [])
    if "array" in kinds:
        return True
    return ("object" in kinds or "properties" in node) and node.get("additionalProperties") is not False


@dataclass
class Findings:
    unread: list[str]  # schema keys no template reads
    unknown: dict[str, list[str]]  # read path -> where, for paths the schema lacks
    via_ancestor: list[str] = field(default_factory=list)  # read only as part of an ancestor (whole or pass-through)
    via_any_ancestor: list[str] = field(default_factory=list)  # ... under the old rule: any read of an ancestor


def check_chart(chart_dir: Path) -> Findings:
    schema = json.loads((chart_dir / "values.schema.json").read_text())
    all_reads = chart_reads(chart_dir)
    read_paths = {r.path for r in all_reads if r.path}
    whole = {r.path for r in all_reads if r.path and r.whole}
    keys = schema_keys(schema)
    unread, via, via_any = [], [], []
    for path in keys:
        if path in read_paths or any(p[:len(path)] == path for p in read_paths):
            continue
        ancestors = [path[:i] for i in range(1, len(path))]
        if any(a in whole or (a in read_paths and _passed_through(keys[a])) for a in ancestors):
            via.append(".".join(path))
        else:
            unread.append(".".join(path))
        if any(a in read_paths for a in ancestors):
            via_any.append(".".join(path))
    unknown: dict[str, list[str]] = {}
    for r in all_reads:
        if r.path and not _known(schema, r.path):
            unknown.setdefault(".".join(r.path), []).append(r.where)
    return Findings(sorted(unread), unknown, sorted(via), sorted(via_any))


def load_exceptions(path: Path) -> dict[tuple[str, str, str], str]:
    """(chart, kind, key) -> reason, from a YAML list of {chart, kind: unread|unknown, key, reason}."""
    out: dict[tuple[str, str, str], str] = {}
    for entry in yaml.safe_load(path.read_text()) or []:
        if set(entry) != {"chart", "kind", "key", "reason"} or entry["kind"] not in ("unread", "unknown") \
                or not str(entry["reason"]).strip():
            raise ValueError(f"{path}: each exception needs chart, kind (unread/unknown), key and a reason: {entry}")
        out[(entry["chart"], entry["kind"], entry["key"])] = entry["reason"]
    return out


def main() -> None:
    """Per chart: the schema keys, and those read only through an ancestor (old rule, these rules)."""
    root = Path(__file__).resolve().parents[2]
    for chart in sorted(p.parent for p in (root / "charts").glob("*/Chart.yaml")):
        found = check_chart(chart)
        total = len(schema_keys(json.loads((chart / "values.schema.json").read_text())))
        print(f"{chart.name}: {total} keys; only via an ancestor: {len(found.via_any_ancestor)} under any read "
              f"of it, {len(found.via_ancestor)} handed whole or passed through; unread {len(found.unread)}, "
              f"unknown {len(found.unknown)}")


if __name__ == "__main__":
    sys.exit(main())

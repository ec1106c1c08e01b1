"""The README's marked shell blocks: an HTML comment `<!-- install:NAME ... -->` (or
`sizing:NAME`) on the line before a fenced block names it, so tests can read (and run) exactly
what users copy."""

from __future__ import annotations

import re
import shlex

from tests.harness.paths import ROOT

README = ROOT / "README.md"
_BLOCK = re.compile(r"^<!-- ((?:install|sizing):[a-z-]+)\b[^>]*-->\n```(?:bash|sh)\n(.*?)^```$", re.M | re.S)


def blocks(text: str | None = None) -> dict[str, str]:
    """Marker name (install:commands ...) -> the fenced block's text under it."""
    found: dict[str, str] = {}
    for m in _BLOCK.finditer(README.read_text() if text is None else text):
        if m.group(1) in found:
            raise ValueError(f"README: two blocks marked {m.group(1)}")
        found[m.group(1)] = m.group(2)
    return found


def commands(block: str) -> list[str]:
    """The block's commands, one per entry: comments dropped, `\\` continuations joined."""
    out: list[str] = []
    pending = ""
    for line in block.splitlines():
        line = pending + line
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        words = shlex.split(line, comments=True)
        if words:
            out.append(line)
    if pending:
        raise ValueError(f"README block ends inside a continued line: {pending!r}")
    return out


def argv(command: str) -> list[str]:
    return shlex.split(command, comments=True)

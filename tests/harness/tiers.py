"""The test tiers of the Makefile (`make test-tiers`) and which tier selects each collected test.

`python -m tests.harness.tiers OUT.json` collects every test `make test` runs (plain `pytest`) and
writes each test's node id and marker names; `tier_of` applies a tier's pytest arguments (`-m EXPR`
and paths, the only forms the tiers use) to one such test.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .paths import ROOT


@dataclass(frozen=True)
class Tier:
    name: str
    markexpr: str
    paths: tuple[str, ...]

    def selects(self, nodeid: str, markers: set[str]) -> bool:
        in_paths = any(nodeid == p or nodeid.startswith((p.rstrip("/") + "/", p + "::")) for p in self.paths)
        return in_paths and _evaluate(self.markexpr, markers)


_EXPR = re.compile(r"^[\w\s()]*$")


def _evaluate(expr: str, markers: set[str]) -> bool:
    """A `-m` expression of marker names, and, or, not and parentheses (Python's own syntax)."""
    if not expr:
        return True
    if not _EXPR.match(expr):
        raise ValueError(f"marker expression {expr!r} uses more than names, and, or, not, parentheses")
    names = {n: n in markers for n in re.findall(r"\w+", expr) if n not in ("and", "or", "not")}
    return bool(eval(expr, {"__builtins__": {}}, names))  # noqa: S307 - checked against _EXPR above


def parse_args(name: str, args: list[str]) -> Tier:
    markexpr, paths, rest = "", [], list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "-m" and rest:
            markexpr = rest.pop(0)
        elif arg.startswith("-"):
            raise ValueError(f"tier {name}: pytest argument {arg!r} is not understood here; "
                             "tiers select with -m EXPR and paths only")
        else:
            paths.append(arg)
    return Tier(name, markexpr, tuple(paths or ["tests"]))


def make_tiers(root: Path = ROOT) -> list[Tier]:
    """The tiers as `make test-tiers` prints them: one line per tier, tab-separated arguments."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(root), "test-tiers"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    tiers = []
    for line in out.splitlines():
        name, *args = line.split("\t")
        tiers.append(parse_args(name, args))
    return tiers


class _Recorder:
    def __init__(self) -> None:
        self.items: dict[str, list[str]] = {}

    def pytest_collection_finish(self, session) -> None:  # noqa: ANN001
        for item in session.items:
            self.items[item.nodeid] = sorted({m.name for m in item.iter_markers()})


def collect(root: Path = ROOT) -> dict[str, set[str]]:
    """node id -> marker names of every test plain `pytest` collects (in a subprocess)."""
    proc = subprocess.run([sys.executable, "-m", "tests.harness.tiers", "-"], cwd=root,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"collecting the tests failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return {k: set(v) for k, v in json.loads(proc.stdout.splitlines()[-1]).items()}


def main() -> int:
    import pytest

    recorder = _Recorder()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[recorder])
    if code != 0:
        return int(code)
    print("\n" + json.dumps(recorder.items))
    return 0


if __name__ == "__main__":
    sys.exit(main())

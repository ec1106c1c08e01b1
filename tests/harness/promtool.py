"""promtool wrappers: `check rules` and `test rules` (Prometheus 2.42 from Debian, see mk/tools.mk)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .tools import require_tool

PathLike = str | os.PathLike[str]
_TIMEOUT_S = 300


class PromtoolError(RuntimeError):
    def __init__(self, cmd: list[str], returncode: int, output: str) -> None:
        self.cmd = cmd
        self.returncode = returncode
        self.output = output
        super().__init__(f"{' '.join(cmd)} exited {returncode}:\n{output.strip()}")


def _run(args: list[str], cwd: PathLike | None = None) -> str:
    cmd = [str(require_tool("promtool")), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, cwd=cwd)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise PromtoolError(["promtool", *args], proc.returncode, output)
    return output


def check_rules(path: PathLike, *more: PathLike) -> str:
    """`promtool check rules FILE...`; returns its output, raises PromtoolError on failure."""
    return _run(["check", "rules", str(path), *map(str, more)])


def test_rules(path: PathLike, *more: PathLike) -> str:
    """`promtool test rules TEST_FILE...` (run from the test file's folder, so relative
    `rule_files` resolve as promtool documents); raises PromtoolError on failure."""
    first = Path(path)
    return _run(["test", "rules", str(first.resolve()), *(str(Path(p).resolve()) for p in more)],
                cwd=first.resolve().parent)


# A test module that imports this name must not have pytest collect it as a test.
test_rules.__test__ = False  # type: ignore[attr-defined]


def write_rule_file(prometheus_rule: Mapping[str, Any], dest: PathLike) -> Path:
    """Write a rendered PrometheusRule's spec (its `groups`) as a promtool rule file."""
    if prometheus_rule.get("kind") != "PrometheusRule":
        raise ValueError(f"expected a PrometheusRule, got {prometheus_rule.get('kind')!r}")
    groups = (prometheus_rule.get("spec") or {}).get("groups")
    if not groups:
        name = (prometheus_rule.get("metadata") or {}).get("name")
        raise ValueError(f"PrometheusRule {name}: spec.groups is empty")
    path = Path(dest)
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path

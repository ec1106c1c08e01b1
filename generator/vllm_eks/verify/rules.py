"""`promtool check rules` on the rule groups of rendered PrometheusRule objects.

promtool parses every expression with Prometheus's own PromQL parser and checks the rule file's
structure (names, labels, durations), which no schema does. It is a separate binary (Prometheus
release archives; Debian/Ubuntu package `prometheus`), so it is found like helm: --promtool,
else $VLLM_EKS_PROMTOOL, else promtool on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

PROMTOOL_ENV = "VLLM_EKS_PROMTOOL"
INSTALL_HINT = ("install Prometheus's promtool (a Prometheus release archive, or `apt-get install prometheus`) "
                f"and put it on PATH, or pass --promtool / set {PROMTOOL_ENV}")
_TIMEOUT_S = 120


def find_promtool(explicit: str | None = None) -> str | None:
    """The promtool binary to run, or None when there is none."""
    return shutil.which(explicit or os.environ.get(PROMTOOL_ENV) or "promtool")


def rule_objects(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == "PrometheusRule"]


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "<no name>"))


def _problem_lines(output: str, rule_file: Path) -> str:
    # promtool prints "Checking FILE" and "  FAILED:" before the reasons, with the temp path in them
    lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
    kept = [line.replace(str(rule_file), "").strip(": ") for line in lines
            if not line.startswith("Checking ") and line not in ("FAILED:", "SUCCESS")]
    return "; ".join(kept) or "no output"


def check_rules(objects: Iterable[dict[str, Any]], promtool: str) -> list[str]:
    """One problem per PrometheusRule that promtool rejects, naming it; [] when all pass."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="vllm-eks-rules-") as tmp:
        for obj in rule_objects(objects):
            rule_file = Path(tmp) / f"{_name(obj)}.yaml"
            groups = (obj.get("spec") or {}).get("groups") or []
            rule_file.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
            try:
                proc = subprocess.run([promtool, "check", "rules", str(rule_file)], capture_output=True,
                                      text=True, timeout=_TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired) as e:
                problems.append(f"PrometheusRule/{_name(obj)}: cannot run {promtool} ({e})")
                continue
            if proc.returncode != 0:
                problems.append(f"PrometheusRule/{_name(obj)}: {_problem_lines(proc.stdout + proc.stderr, rule_file)}")
    return problems

"""Run checkov's Kubernetes policies on rendered manifests.

checkov exits 0 and reports zero resources when it parsed nothing (a wrong path, a template
that rendered to nothing), so callers must assert `resource_count > 0`. Checks are skipped per
object with annotations `checkov.io/skip<N>: CKV_K8S_<id>=<reason>`; checkov splits the value on
'=' (a reason containing '=' crashes it) and records "No comment provided" when the reason is
missing (checkov 3.3.30, checkov/kubernetes/kubernetes_utils.py `get_skipped_checks`), so
`skip_annotations()` reads the rendered objects to let tests demand a real reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .tools import require_tool

_TIMEOUT_S = 600
SKIP_ANNOTATION_PREFIXES = ("checkov.io/skip", "bridgecrew.io/skip", "cortex.io/skip")
NO_REASON = "No comment provided"  # what checkov records for a skip without '=reason'


class CheckovError(RuntimeError):
    pass


@dataclass(frozen=True)
class Finding:
    check_id: str
    check_name: str
    resource: str  # "Kind.namespace.name", checkov's notation
    file: str
    lines: tuple[int, int] | None
    reason: str | None = None  # suppress comment, for skipped checks

    def __str__(self) -> str:
        where = f"{self.file}:{self.lines[0]}-{self.lines[1]}" if self.lines else self.file
        return f"{self.check_id} {self.check_name} on {self.resource} ({where})"


@dataclass
class CheckovResult:
    passed: int
    failed: int
    skipped: int
    resource_count: int
    parsing_errors: list[str]
    failed_checks: list[Finding]
    skipped_checks: list[Finding]
    passed_checks: list[Finding] = field(repr=False)
    version: str = ""

    def summary(self) -> str:
        return (f"checkov {self.version}: {self.resource_count} resources, {self.passed} passed, "
                f"{self.failed} failed, {self.skipped} skipped, {len(self.parsing_errors)} parse errors")

    def failures_text(self) -> str:
        return "\n".join(str(f) for f in self.failed_checks)

    def resources(self) -> set[str]:
        """Resources that at least one check looked at."""
        return {f.resource for f in (*self.passed_checks, *self.failed_checks, *self.skipped_checks)}


@dataclass(frozen=True)
class AnnotationSkip:
    check_id: str
    reason: str  # "" when the annotation gives none
    resource: str  # Kind/name
    annotation: str

    @property
    def has_reason(self) -> bool:
        return bool(self.reason.strip())


def skip_annotations(objects: Iterable[Mapping[str, Any]]) -> list[AnnotationSkip]:
    """Every checkov skip annotation on the objects, with its written reason ('' if none).

    A value with more than one '=' is reported with reason '' and the whole value kept in
    `annotation`, because checkov itself cannot parse it.
    """
    skips: list[AnnotationSkip] = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        resource = f"{obj.get('kind')}/{meta.get('name')}"
        for key, value in (meta.get("annotations") or {}).items():
            if not any(prefix in str(key) for prefix in SKIP_ANNOTATION_PREFIXES):
                continue
            text = str(value)
            parts = text.split("=")
            check_id = parts[0].strip()
            reason = parts[1].strip() if len(parts) == 2 else ""
            skips.append(AnnotationSkip(check_id, reason, resource, f"{key}: {text}"))
    return skips


def _finding(entry: Mapping[str, Any]) -> Finding:
    lines = entry.get("file_line_range")
    return Finding(
        check_id=str(entry.get("check_id")),
        check_name=str(entry.get("check_name")),
        resource=str(entry.get("resource")),
        file=str(entry.get("file_path", "")).lstrip("/"),
        lines=tuple(lines) if lines else None,  # type: ignore[arg-type]
        reason=(entry.get("check_result") or {}).get("suppress_comment"),
    )


def _write_target(target: Any, workdir: Path) -> Path:
    """Materialise what to scan; returns the directory to hand to checkov."""
    if isinstance(target, os.PathLike):
        path = Path(target)
        if path.is_dir():
            return path
        if path.is_file():
            (workdir / path.name).write_text(path.read_text())
            return workdir
        raise FileNotFoundError(f"checkov target {path} does not exist")
    if isinstance(target, str):
        if "\n" not in target and Path(target).is_dir():
            return Path(target)
        (workdir / "rendered.yaml").write_text(target)
        return workdir
    if isinstance(target, Mapping):  # file name -> YAML text
        for name, text in target.items():
            (workdir / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")).write_text(text)
        return workdir
    if isinstance(target, Sequence):  # rendered objects
        (workdir / "rendered.yaml").write_text(yaml.safe_dump_all(list(target), sort_keys=False))
        return workdir
    raise TypeError(f"cannot scan a {type(target).__name__}")


def scan(target: Any, extra_args: Sequence[str] = ()) -> CheckovResult:
    """Run `checkov --framework kubernetes --skip-download -o json` on rendered output.

    target: YAML text, a directory or file path, a list of rendered objects, or a mapping of
    file name -> YAML text (one checkov run for many renders; findings carry the file name).
    Failed checks do not raise: the caller asserts on `failed_checks` and `resource_count`.
    """
    binary = require_tool("checkov")
    with tempfile.TemporaryDirectory(prefix="vllm-eks-checkov-") as tmp:
        directory = _write_target(target, Path(tmp))
        cmd = [str(binary), "--framework", "kubernetes", "--skip-download", "--output", "json",
               "--compact", "--directory", str(directory), *extra_args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S,
                              cwd=tmp)
    # Exit 1 only means "some check failed"; anything else, or unparsable output, is an error.
    if proc.returncode not in (0, 1):
        raise CheckovError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise CheckovError(f"checkov printed no JSON ({exc}); stderr:\n{proc.stderr[-4000:]}") from exc
    if isinstance(report, list):  # several frameworks -> list of reports
        report = next((r for r in report if r.get("check_type") == "kubernetes"), {})
    if "summary" not in report:  # nothing parsed: checkov prints the bare summary
        summary, results = report, {}
    else:
        summary, results = report["summary"], report.get("results", {})
    return CheckovResult(
        passed=int(summary.get("passed", 0)),
        failed=int(summary.get("failed", 0)),
        skipped=int(summary.get("skipped", 0)),
        resource_count=int(summary.get("resource_count", 0)),
        parsing_errors=[str(p) for p in results.get("parsing_errors", [])],
        failed_checks=[_finding(e) for e in results.get("failed_checks", [])],
        skipped_checks=[_finding(e) for e in results.get("skipped_checks", [])],
        passed_checks=[_finding(e) for e in results.get("passed_checks", [])],
        version=str(summary.get("checkov_version", "")),
    )

"""The checks of `vllm-eks verify` on one values folder, each a line of the report.

Every chart is rendered once; its objects feed the schema check, check-fit and promtool, so a
folder costs one `helm lint` and one `helm template` per values file."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_eks.check.scheduling import (
    FitError,
    check_fit,
    format_mismatches,
    helm_binary,
    helm_failure_line,
    render_chart,
)

from . import rules
from .crd_schema import CrdRegistry
from .folders import RELEASES, ChartRelease
from .objects import validate_all

OK, FAIL, SKIPPED = "ok", "FAIL", "skipped"


@dataclass(frozen=True)
class Check:
    folder: Path
    name: str
    status: str  # OK, FAIL or SKIPPED
    detail: str

    def line(self) -> str:
        return f"{self.status:<7} {self.folder} {self.name}: {self.detail}"


@dataclass(frozen=True)
class Tools:
    charts: Path
    crds: CrdRegistry
    helm: str | None = None
    promtool: str | None = None  # None: not found, the rules check is skipped
    require_promtool: bool = False
    kube_version: str = "1.33"


def _one_line(problems: list[str]) -> str:
    # SchemaError text is "Kind/name [...] is invalid against ...:\n  - path: message"
    return "; ".join(" ".join(p.split()) for p in problems).replace(":; ", ": ")


def lint(release: ChartRelease, values: Path, tools: Tools) -> str | None:
    """helm lint --strict of one chart with its values file: None, or helm's reason."""
    cmd = [helm_binary(tools.helm), "lint", "--strict", str(tools.charts / release.chart), "--namespace",
           release.namespace, "--values", str(values), "--kube-version", tools.kube_version]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run {cmd[0]} ({e})"
    if proc.returncode == 0:
        return None
    output = proc.stdout + proc.stderr
    # lint prints "[ERROR] templates/x.yaml: ..." or "[WARNING] ..." (--strict fails on both)
    found = [" ".join(x.split()) for x in output.splitlines() if "[ERROR]" in x or "[WARNING]" in x]
    return "; ".join(found) if found else helm_failure_line(output)


def _plan_catalog(folder: Path) -> dict[str, Any] | None:
    """The node of plan.json when it lies outside the instance catalog (check-fit sizes by it)."""
    from vllm_eks.catalog.ec2 import hardware_from_record
    from vllm_eks.spec.plan import Plan

    plan = folder / "plan.json"
    if not plan.is_file():
        return None
    saved = Plan.from_summary(json.loads(plan.read_text()))
    outside = hardware_from_record(saved.hardware) if saved.hardware else None
    return {outside.name: outside} if outside else None


def _guarded(folder: Path, name: str, body: Callable[[], Check]) -> Check:
    try:
        return body()
    except (FitError, ValueError, KeyError, TypeError, OSError) as e:
        return Check(folder, name, FAIL, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def verify_folder(folder: Path, tools: Tools) -> list[Check]:
    checks: list[Check] = []
    rendered: dict[str, list[dict[str, Any]]] = {}
    for release in RELEASES:
        values = folder / release.values_file
        if not values.is_file():
            continue
        problem = lint(release, values, tools)
        checks.append(Check(folder, f"helm lint {release.values_file}", FAIL if problem else OK,
                            problem or f"chart {release.chart} lints clean (--strict)"))
        try:
            objects = render_chart(tools.charts / release.chart, values, release.release, release.namespace,
                                   tools.helm, whole_error=True)
        except FitError as e:
            checks.append(Check(folder, f"helm template {release.values_file}", FAIL, str(e)))
            continue
        rendered[release.chart] = objects
        report = validate_all(objects, tools.crds, tools.kube_version, raise_on_error=False)
        checks.append(Check(folder, f"schemas {release.values_file}", OK if report.ok else FAIL,
                            report.summary() if report.ok else f"{len(report.errors)} invalid object(s) "
                            f"rendered from {values.name}: {_one_line(report.errors)}"))
    checks.append(_guarded(folder, "check-fit", lambda: _fit(folder, rendered)))
    checks.append(_rules(folder, rendered, tools))
    return checks


def _fit(folder: Path, rendered: dict[str, list[dict[str, Any]]]) -> Check:
    missing = [f"{c}.yaml" for c in ("gpu-infra", "vllm-inference") if c not in rendered]
    if missing:
        return Check(folder, "check-fit", SKIPPED, f"needs {' and '.join(missing)} rendered (missing or failed above)")
    mismatches = check_fit(folder, infra_objects=rendered["gpu-infra"], server_objects=rendered["vllm-inference"],
                           catalog=_plan_catalog(folder))
    if mismatches:
        return Check(folder, "check-fit", FAIL, _one_line(format_mismatches(mismatches).splitlines()))
    return Check(folder, "check-fit", OK, "every model-server pod fits its GPU pool")


def _rules(folder: Path, rendered: dict[str, list[dict[str, Any]]], tools: Tools) -> Check:
    objects = [o for chart in rendered.values() for o in chart]
    count = len(rules.rule_objects(objects))
    if not count:
        return Check(folder, "promtool", SKIPPED, "no PrometheusRule rendered")
    if tools.promtool is None:
        status = FAIL if tools.require_promtool else SKIPPED
        return Check(folder, "promtool", status, f"promtool not found ({rules.INSTALL_HINT}); "
                     f"{count} PrometheusRule(s) not checked")
    problems = rules.check_rules(objects, tools.promtool)
    if problems:
        return Check(folder, "promtool", FAIL, _one_line(problems))
    return Check(folder, "promtool", OK, f"{count} PrometheusRule(s) pass `promtool check rules`")

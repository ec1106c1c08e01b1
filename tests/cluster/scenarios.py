"""The committed values/ scenarios and the charts present in the repository.

The tier installs whatever exists: a chart without charts/<chart>/Chart.yaml, or a scenario
without values/<scenario>/<chart>.yaml, is left out of that scenario's install (and the test
says so in its output)."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tests.harness.helm import HELM_VERSIONS
from tests.harness.paths import ROOT, VALUES
from tools import package_charts

# Install order: the pools before the workloads that select them, monitors last.
CHARTS = ("gpu-infra", "vllm-inference", "observability")


def chart_dir(chart: str) -> Path | None:
    d = ROOT / "charts" / chart
    return d if (d / "Chart.yaml").is_file() else None


@lru_cache(maxsize=1)
def packages() -> dict[str, Path]:
    """Every chart packaged once per test session by the step `make package` runs, so the tier
    installs the .tgz a release pushes, not the folder (ci/ and .helmignore'd files left out)."""
    out = Path(tempfile.mkdtemp(prefix="vllm-eks-charts-"))
    atexit.register(shutil.rmtree, out, True)
    return {chart.name: package_charts.package(HELM_VERSIONS["helm4"], chart, out)
            for chart in package_charts.charts(ROOT)}


def chart_package(chart: str) -> str:
    """The packaged chart to `helm install`/`upgrade` (a .tgz path)."""
    return str(packages()[chart])


@dataclass(frozen=True)
class Scenario:
    name: str
    dir: Path

    @property
    def plan(self) -> dict[str, Any] | None:
        p = self.dir / "plan.json"
        return json.loads(p.read_text()) if p.is_file() else None

    def values(self, chart: str) -> Path | None:
        f = self.dir / f"{chart}.yaml"
        return f if f.is_file() else None

    def charts(self) -> list[str]:
        """Charts of this scenario that can be installed: chart present and values written."""
        return [c for c in CHARTS if chart_dir(c) and self.values(c)]

    @property
    def namespace(self) -> str:
        """The namespace the scenario's values expect the model server in (observability's
        target.namespace, where its monitors and ScaledObject go); else one of its own."""
        obs = self.values("observability")
        if obs:
            target = (yaml.safe_load(obs.read_text()) or {}).get("target") or {}
            if target.get("namespace"):
                return str(target["namespace"])
        # A DNS-1123 label: scenario directory names are already lower-case with dashes/dots.
        return ("s-" + self.name.replace(".", "-").replace("_", "-"))[:63].rstrip("-")


def discover() -> list[Scenario]:
    root = VALUES
    if not root.is_dir():
        return []
    return [Scenario(d.name, d) for d in sorted(root.iterdir())
            if d.is_dir() and ((d / "plan.json").is_file() or any((d / f"{c}.yaml").is_file() for c in CHARTS))]

"""Whether a values folder was written for the charts check-fit renders it with: each values file
records the chart version `vllm-eks values` wrote it for (writtenForChartVersion); a chart of
another version may read keys differently, so check-fit says so in one line (and the chart's
release notes do on `helm install`)."""

from __future__ import annotations

from pathlib import Path

import yaml

from vllm_eks.check.charts_source import CHARTS

VERSION_KEY = "writtenForChartVersion"


def _chart_version(charts: Path, chart: str) -> str:
    doc = yaml.safe_load((charts / chart / "Chart.yaml").read_text())
    return str(doc.get("version", "")) if isinstance(doc, dict) else ""


def _written_for(values: Path) -> str:
    try:
        doc = yaml.safe_load(values.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""  # rendering the file reports what is wrong with it
    return str(doc.get(VERSION_KEY) or "") if isinstance(doc, dict) else ""


def version_warning(scenario: Path, charts: Path) -> str | None:
    """One line naming every values file written for another chart version, or None."""
    differing = []
    for chart in CHARTS:
        written = _written_for(scenario / f"{chart}.yaml")
        actual = _chart_version(charts, chart)
        if written and written != actual:
            differing.append(f"{chart}.yaml was written for {chart} {written}, the chart is {actual}")
    if not differing:
        return None
    return (f"warning: {scenario}: {'; '.join(differing)} ({charts}): write the folder again with the "
            "vllm-eks release that matches the charts")

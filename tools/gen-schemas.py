#!/usr/bin/env python3
"""Regenerate (or, with --check, verify) every chart's values.schema.json from the generator's
pydantic values models, and with --docs the values reference table in the chart's README.

The charts are the directories charts/<name>/ with a Chart.yaml; each chart's model is the return
type of its builder in the generator's chart registry (CHART_BUILDERS). Nothing here lists them."""

from __future__ import annotations

import argparse
import sys
import typing
from pathlib import Path

import yaml

from vllm_eks.chart_values.registry import CHART_BUILDERS
from vllm_eks.chart_values.schema import render_schema, replace_reference, values_reference_markdown, values_schema

ROOT = Path(__file__).resolve().parent.parent


def charts() -> list[str]:
    """Every chart of the repository: the directories charts/<name>/ holding a Chart.yaml."""
    return sorted(p.parent.name for p in (ROOT / "charts").glob("*/Chart.yaml"))


def chart_model(chart: str) -> type:
    """The pydantic values model of a chart: what its registered builder returns."""
    if chart not in CHART_BUILDERS:
        raise SystemExit(f"charts/{chart} has no values builder in the generator's CHART_BUILDERS")
    return typing.get_type_hints(CHART_BUILDERS[chart])["return"]


def expected_files(chart: str) -> dict[Path, str]:
    """path -> content this script writes for one chart."""
    model = chart_model(chart)
    title = f"{chart} values"
    chart_dir = ROOT / "charts" / chart
    files = {chart_dir / "values.schema.json": render_schema(model, title)}
    readme = chart_dir / "README.md"
    if readme.exists():
        defaults = yaml.safe_load((chart_dir / "values.yaml").read_text()) or {}
        table = values_reference_markdown(values_schema(model, title), defaults)
        files[readme] = replace_reference(readme.read_text(), table)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true", help="README values reference instead of schemas")
    parser.add_argument("--check", action="store_true", help="fail when a file differs, write nothing")
    args = parser.parse_args()
    drift: list[Path] = []
    for chart in charts():
        for path, content in expected_files(chart).items():
            if (path.name == "README.md") != args.docs:
                continue
            current = path.read_text() if path.exists() else None
            if current == content:
                continue
            if args.check:
                drift.append(path)
            else:
                path.write_text(content)
                print(f"wrote {path.relative_to(ROOT)}")
    for path in drift:
        print(f"out of date: {path.relative_to(ROOT)} (run make {'docs' if args.docs else 'schemas'})",
              file=sys.stderr)
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())

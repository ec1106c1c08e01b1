#!/usr/bin/env python3
"""Regenerate (or, with --check, verify) every chart's values.schema.json from the generator's
pydantic values models, and with --docs the values reference table in the chart's README.

A chart joins by adding one line to CHARTS: (chart directory, "module:Model", schema title)."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import yaml

from vllm_eks.chart_values.schema import render_schema, replace_reference, values_reference_markdown, values_schema

ROOT = Path(__file__).resolve().parent.parent

CHARTS: list[tuple[str, str, str]] = [
    ("charts/vllm-inference", "vllm_eks.chart_values.vllm_inference:VllmInferenceValues", "vllm-inference values"),
    ("charts/observability", "vllm_eks.chart_values.observability:ObservabilityValues", "observability values"),
    ("charts/gpu-infra", "vllm_eks.chart_values.gpu_infra:GpuInfraValues", "gpu-infra values"),
]


def _model(ref: str) -> type:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def expected_files(chart: str, ref: str, title: str) -> dict[Path, str]:
    """path -> content this script writes for one chart."""
    model = _model(ref)
    chart_dir = ROOT / chart
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
    for chart, ref, title in CHARTS:
        for path, content in expected_files(chart, ref, title).items():
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

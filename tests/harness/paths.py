"""Where things are in the repository: the one place tests and tools name its folders."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHARTS = ROOT / "charts"
VALUES = ROOT / "values"
SCENARIOS_FILE = VALUES / "scenarios.yaml"
GENERATOR_PACKAGE = ROOT / "generator" / "vllm_eks"
TOOLS = ROOT / "tools"
DOCS = ROOT / "docs"

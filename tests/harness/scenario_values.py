"""The values models behind every committed scenario: the builders' full output, caught while
`make values` (vllm_eks.cli.scenarios) writes the scenarios, next to the files written from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from pydantic import BaseModel

from tests.harness.paths import SCENARIOS_FILE
from vllm_eks.cli import scenarios
from vllm_eks.output import scenario_folder as emit


@dataclass(frozen=True)
class ChartValues:
    scenario: str
    chart: str
    topology: str
    model: BaseModel          # what the builder returned
    path: Path                # the file written from it


def generate(out_root: Path) -> list[ChartValues]:
    """Write every scenario under out_root and return each chart's values model with its file."""
    seen: list[tuple[str, BaseModel, str]] = []
    original = emit.values_file

    def record(chart: str, model: BaseModel, topology: str) -> str:
        seen.append((chart, model, topology))
        return original(chart, model, topology)

    with mock.patch.object(emit, "values_file", record):
        names = scenarios.generate(SCENARIOS_FILE, out_root)
    per_scenario = len(seen) // len(names)
    return [ChartValues(name, chart, topology, model, out_root / name / f"{chart}.yaml")
            for i, name in enumerate(names)
            for chart, model, topology in seen[i * per_scenario:(i + 1) * per_scenario]]

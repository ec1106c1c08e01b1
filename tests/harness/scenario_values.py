"""The values models behind every committed scenario: the builders' full output, caught while
tools/gen_values.py writes the scenarios, next to the files written from it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from pydantic import BaseModel

from vllm_eks.output import scenario_folder as emit

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ChartValues:
    scenario: str
    chart: str
    topology: str
    model: BaseModel          # what the builder returned
    path: Path                # the file written from it


def generate(out_root: Path) -> list[ChartValues]:
    """Write every scenario under out_root and return each chart's values model with its file."""
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    import gen_values

    seen: list[tuple[str, BaseModel, str]] = []
    original = emit.values_file

    def record(chart: str, model: BaseModel, topology: str) -> str:
        seen.append((chart, model, topology))
        return original(chart, model, topology)

    with mock.patch.object(emit, "values_file", record):
        names = gen_values.generate(out_root)
    per_scenario = len(seen) // len(names)
    return [ChartValues(name, chart, topology, model, out_root / name / f"{chart}.yaml")
            for i, name in enumerate(names)
            for chart, model, topology in seen[i * per_scenario:(i + 1) * per_scenario]]

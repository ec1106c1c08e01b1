"""A scenario's values file leaves out keys equal to the chart defaults and sections of other
topologies; the chart must render exactly the objects the builder's full values render."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS
from tests.harness.scenario_values import generate
from vllm_eks.output.scenario_folder import values_document

pytestmark = pytest.mark.render



def test_short_values_render_what_the_full_values_render(tmp_path: Path) -> None:
    compared = 0
    for cv in generate(tmp_path / "scenarios"):
        full = tmp_path / f"{cv.scenario}-{cv.chart}-full.yaml"
        full.write_text(yaml.safe_dump(values_document(cv.model), sort_keys=False))
        chart = CHARTS / cv.chart
        short_objects = helm.render(chart, [cv.path], namespace="llm")
        assert short_objects == helm.render(chart, [full], namespace="llm"), f"{cv.scenario}/{cv.chart}"
        compared += len(short_objects)
    assert compared > 100

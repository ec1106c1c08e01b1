"""Values written for another chart version: the release notes (`helm install`, Helm 4's client
dry run prints them without a cluster) start with one WARNING line naming both versions; values
written for this version, and hand-written values without the key, print none. Every committed
scenario records the version of the chart beside it."""

from __future__ import annotations

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS, ROOT
from vllm_eks.check.charts_source import CHARTS as CHART_NAMES
from vllm_eks.values.chart_versions import CHART_VERSIONS

pytestmark = pytest.mark.render

SCENARIO = ROOT / "values" / "qwen2.5-7b-g6-xlarge"


def _notes(chart: str, written_for: str | None) -> str:
    args = ["install", "r", str(CHARTS / chart), "--namespace", "llm", "--dry-run=client",
            "--values", str(SCENARIO / f"{chart}.yaml")]
    if written_for is not None:
        args += ["--set-json", f"writtenForChartVersion={written_for!r}".replace("'", '"')]
    out = helm._run("helm4", args).stdout
    return out[out.index("NOTES:\n") + len("NOTES:\n"):]


@pytest.mark.parametrize("chart", CHART_NAMES)
def test_notes_warn_in_one_line_for_another_chart_version(chart: str) -> None:
    version = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())["version"]
    first = _notes(chart, "0.0.1").splitlines()[0]
    assert first == (f"WARNING: these values were written by `vllm-eks values` for {chart} 0.0.1, and this is "
                     f"{chart} {version}: write them again with the vllm-eks release that matches this chart.")
    assert "WARNING" not in _notes(chart, version)
    assert "WARNING" not in _notes(chart, "")


def test_generated_versions_are_the_charts_and_every_scenario_records_them() -> None:
    assert CHART_VERSIONS == {c: yaml.safe_load((CHARTS / c / "Chart.yaml").read_text())["version"]
                              for c in CHART_NAMES}
    folders = sorted(p.parent for p in (ROOT / "values").glob("*/plan.json"))
    assert folders
    for folder in folders:
        for chart in CHART_NAMES:
            doc = yaml.safe_load((folder / f"{chart}.yaml").read_text())
            assert doc["writtenForChartVersion"] == CHART_VERSIONS[chart], (folder.name, chart)

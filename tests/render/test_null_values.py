"""A null in a user's values file deletes the chart's default for that key (Helm's coalescing).
Every top-level key of each chart's values must then be reported as missing, by name, by the
schema, never reach a template as nil (issue 14: `model: null` ended in a nil-pointer error)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.harness import helm
from tests.harness.key_paths import names_key
from tests.harness.paths import CHARTS, ROOT

pytestmark = pytest.mark.render

# A values file each chart renders with (gpu-infra has no pool by default).
BASE = {"vllm-inference": None, "observability": None,
        "gpu-infra": ROOT / "charts/gpu-infra/ci/01-default-values.yaml"}


def _cases() -> list[tuple[str, str]]:
    out = []
    for chart in sorted(BASE):
        defaults = yaml.safe_load((CHARTS / chart / "values.yaml").read_text()) or {}
        out += [(chart, key) for key in defaults]
    return out


CASES = _cases()


def test_every_chart_has_keys_to_null() -> None:
    assert {chart for chart, _ in CASES} == set(BASE) and len(CASES) >= 30


@pytest.mark.parametrize("chart,key", CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_null_top_level_key_is_named(chart: str, key: str, helm_version: str, tmp_path: Path) -> None:
    nulled = tmp_path / "null.yaml"
    nulled.write_text(f"{key}: null\n")
    files = [f for f in (BASE[chart], nulled) if f is not None]
    with pytest.raises(helm.HelmError) as info:
        helm.render(CHARTS / chart, files, helm=helm_version, namespace="llm")
    message = info.value.stderr
    assert names_key(message, key) or f"'{key}'" in message, f"{chart}: {key}: null not named:\n{message}"
    assert "nil pointer" not in message and "executing" not in message, message

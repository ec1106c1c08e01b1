"""One home per value rule in the charts' templates: `<chart>.validate` is run from one template,
and each cross-key rule is a `<chart>.validateValues.<rule>` helper that the validate helper, and
nothing else, calls exactly once (bitnami's validateValues pattern)."""

from __future__ import annotations

import re

import pytest

from tests.harness.paths import ROOT

CHARTS = sorted(p.parent.name for p in (ROOT / "charts").glob("*/Chart.yaml"))
DEFINE = re.compile(r'{{-?\s*define\s+"([^"]+)"\s*-?}}(.*?){{-?\s*end\s*-?}}\s*(?={{-?\s*/\*|{{-?\s*define|\Z)', re.S)


def _templates(chart: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((ROOT / "charts" / chart / "templates").glob("*"))
            if p.is_file()}


def _defines(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in DEFINE.finditer(text)}


@pytest.mark.parametrize("chart", CHARTS)
def test_validate_runs_from_one_template(chart: str) -> None:
    callers = [name for name, text in _templates(chart).items()
               if re.search(rf'include\s+"{re.escape(chart)}\.validate"', text)]
    assert len(callers) == 1, f"{chart}.validate is included from {callers}"


@pytest.mark.parametrize("chart", CHARTS)
def test_each_rule_helper_is_called_once_by_validate(chart: str) -> None:
    templates = _templates(chart)
    defines = {k: v for text in templates.values() for k, v in _defines(text).items()}
    rules = sorted(k for k in defines if k.startswith(f"{chart}.validateValues."))
    if not rules:
        pytest.skip(f"{chart} has no {chart}.validateValues.* helpers")
    body = defines[f"{chart}.validate"]
    everything = "".join(templates.values())
    for rule in rules:
        calls = re.findall(rf'include\s+"{re.escape(rule)}"', everything)
        assert len(calls) == 1, f"{rule} is included {len(calls)} times"
        assert re.search(rf'include\s+"{re.escape(rule)}"', body), f"{rule} is not called by {chart}.validate"

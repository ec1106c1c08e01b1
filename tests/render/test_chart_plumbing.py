"""The plumbing the three charts share. The helpers of tools/chart-templates (image reference,
names) are rendered in a throwaway chart, so each rule is checked once for every chart that carries
it (`make check-schemas` holds the copies equal). And each chart checks its values in one place:
templates/validate.yaml calls <chart>.validate, which calls every validateValues rule exactly once,
so a rule moved beside its domain cannot be left out of the list or run twice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS as CHARTS_DIR
from tests.harness.paths import TOOLS

pytestmark = pytest.mark.render

SHARED = TOOLS / "chart-templates"
CHARTS = sorted(p.parent.name for p in CHARTS_DIR.glob("*/Chart.yaml"))
APP_VERSION = "v9.9.9"


def _probe(tmp_path: Path, body: str, values: dict, helm_version: str, release: str = "vllm") -> dict:
    """data of the one ConfigMap a chart made of the shared helpers and `body` renders."""
    chart = tmp_path / "probe"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: probe\nversion: 0.1.0+build1\nappVersion: {APP_VERSION}\n")
    (chart / "values.yaml").write_text(yaml.safe_dump(values))
    for source in SHARED.glob("*.tpl"):
        (chart / "templates" / f"_{source.name}").write_text(source.read_text().replace("CHART.", "probe."))
    (chart / "templates" / "probe.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\ndata:\n" + body)
    [config_map] = helm.render(chart, helm=helm_version, release=release)
    return config_map["data"]


IMAGE_CASES = {
    "tag": ({"repository": "r.example/img", "tag": "1.2"}, False, "r.example/img:1.2"),
    "digest-wins": ({"repository": "r.example/img", "tag": "1.2", "digest": "sha256:" + "a" * 64}, True,
                    "r.example/img@sha256:" + "a" * 64),
    "empty-digest": ({"repository": "r.example/img", "tag": "1.2", "digest": ""}, True, "r.example/img:1.2"),
    "default-tag": ({"repository": "r.example/img", "tag": ""}, True, f"r.example/img:{APP_VERSION}"),
    "no-tag-key": ({"repository": "r.example/img"}, True, f"r.example/img:{APP_VERSION}"),
    "tag-over-default": ({"repository": "r.example/img", "tag": "1.2"}, True, "r.example/img:1.2"),
    # a chart that does not default the tag renders it as set, as every image did before the helper
    "no-default": ({"repository": "r.example/img", "tag": ""}, False, "r.example/img:"),
}


def test_image_reference(tmp_path: Path, helm_version: str) -> None:
    body = """\
{{- range $k, $c := .Values.cases }}
{{- $args := dict "image" $c.image }}
{{- if $c.appVersionDefault }}{{ $_ := set $args "defaultTag" $.Chart.AppVersion }}{{ end }}
  {{ $k }}: {{ include "probe.imageRef" $args | quote }}
{{- end }}
"""
    cases = {k: {"image": image, "appVersionDefault": default} for k, (image, default, _) in IMAGE_CASES.items()}
    data = _probe(tmp_path, body, {"cases": cases}, helm_version)
    assert data == {k: want for k, (_, _, want) in IMAGE_CASES.items()}


NAME_BODY = """\
  name: {{ include "probe.name" . | quote }}
  fullname: {{ include "probe.fullname" . | quote }}
  chart: {{ include "probe.chart" . | quote }}
"""


@pytest.mark.parametrize(("values", "release", "name", "fullname"), [
    ({}, "vllm", "probe", "vllm-probe"),
    ({}, "my-probe-1", "probe", "my-probe-1"),
    ({"nameOverride": "srv"}, "vllm", "srv", "vllm-srv"),
    ({"nameOverride": "srv"}, "srv-a", "srv", "srv-a"),
    ({"fullnameOverride": "custom", "nameOverride": "srv"}, "vllm", "srv", "custom"),
    ({"fullnameOverride": "x" * 70 + "-"}, "vllm", "probe", "x" * 63),
    ({"nameOverride": "n" * 20}, "r" * 50, "n" * 20, "r" * 50 + "-" + "n" * 12),
], ids=["default", "release-has-name", "name-override", "release-has-override", "fullname-override",
        "fullname-truncated", "prefix-truncated"])
def test_names(tmp_path: Path, helm_version: str, values: dict, release: str, name: str, fullname: str) -> None:
    data = _probe(tmp_path, NAME_BODY, values, helm_version, release=release)
    # "+" is not allowed in a label value
    assert data == {"name": name, "fullname": fullname, "chart": "probe-0.1.0_build1"}


def _templates(chart: str) -> dict[str, str]:
    root = CHARTS_DIR / chart / "templates"
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("chart", CHARTS)
def test_validate_runs_once_from_validate_yaml(chart: str) -> None:
    templates = _templates(chart)
    callers = [name for name, text in templates.items() if f'include "{chart}.validate" ' in text]
    assert callers == ["validate.yaml"], callers


@pytest.mark.parametrize("chart", CHARTS)
def test_every_rule_is_called_once(chart: str) -> None:
    templates = _templates(chart)
    rule = re.escape(chart) + r'\.validateValues\.([A-Za-z0-9]+)'
    defined = [m for text in templates.values() for m in re.findall(r'define "' + rule + '"', text)]
    assert len(defined) == len(set(defined)), sorted(defined)
    validate = re.search(r'define "' + re.escape(chart) + r'\.validate" -\}\}(.*?)\{\{- end -\}\}\n\{\{- end -\}\}',
                         templates["_validate.tpl"], re.S)
    assert validate, f"{chart}.validate not found in templates/_validate.tpl"
    called = re.findall(r'include "' + rule + '"', validate.group(1))
    assert sorted(called) == sorted(defined), (set(defined) ^ set(called), len(called), len(defined))
    # nothing else calls a rule: a second caller would print its messages twice
    others = [(name, m) for name, text in templates.items() for m in re.findall(r'include "' + rule + '"', text)
              if name != "_validate.tpl"]
    assert not others, others


# A values file each chart renders many kinds of objects with; the names of the objects a chart
# names from its values rather than from the release (gpu-infra's cluster-scoped NodePools and
# EC2NodeClasses are named after each pool, which `vllm-eks values` makes unique per release).
OVERRIDE_CASES = {
    "gpu-infra": (CHARTS_DIR / "gpu-infra" / "ci" / "02-efa-pool-values.yaml", {"NodePool", "EC2NodeClass"}),
    "observability": (CHARTS_DIR / "observability" / "ci" / "01-single-node-values.yaml", set()),
    "vllm-inference": (CHARTS_DIR / "vllm-inference" / "values.yaml", set()),
}


@pytest.mark.parametrize(("chart", "override"), [(c, "other") for c in CHARTS] + [
    (c, "true") for c in CHARTS])
def test_fullname_override_renames_the_objects(chart: str, override: str) -> None:
    """fullnameOverride replaces the `<release>-<chart>` prefix of every object the chart names from
    the release; nameOverride the app.kubernetes.io/name label. Objects named from values keep their names."""
    values_file, named_from_values = OVERRIDE_CASES[chart]
    before = helm.render(CHARTS_DIR / chart, [values_file], release="rel", namespace="ns")
    nick = "nick" if override == "other" else "123"  # a name YAML would read as a boolean or number stays a string
    after = helm.render(CHARTS_DIR / chart, [values_file], release="rel", namespace="ns",
                        set_values={"fullnameOverride": override, "nameOverride": nick})
    assert [o["kind"] for o in before] == [o["kind"] for o in after]
    prefix = f"rel-{chart}"
    renamed = 0
    for old, new in zip(before, after, strict=True):
        kind, name = old["kind"], old["metadata"]["name"]
        if kind in named_from_values:
            assert new["metadata"]["name"] == name, (kind, name)
            continue
        assert name.startswith(prefix), (kind, name)
        assert new["metadata"]["name"] == override + name[len(prefix):], (kind, name)
        renamed += 1
        if "app.kubernetes.io/name" in old["metadata"].get("labels", {}):
            assert new["metadata"]["labels"]["app.kubernetes.io/name"] == nick, (kind, name)
    assert renamed >= 2, f"{chart}: {renamed} objects named from the release"
    assert {o["kind"] for o in before} >= named_from_values

"""Every values key a chart's schema defines is read by a template, and every values path a
template reads is in the schema (tests/harness/values_keys.py has the rules), but for the
exceptions in tests/data/values_key_exceptions.yaml, each with its reason."""

import json
from pathlib import Path

import pytest

from tests.harness.values_keys import check_chart, load_exceptions, reads

ROOT = Path(__file__).resolve().parents[2]
CHARTS = sorted(p.parent for p in (ROOT / "charts").glob("*/Chart.yaml"))
EXCEPTIONS = load_exceptions(ROOT / "tests" / "data" / "values_key_exceptions.yaml")


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.name)
def test_schema_keys_and_template_reads_agree(chart: Path) -> None:
    found = check_chart(chart)
    findings = {("unread", key): [] for key in found.unread} | {("unknown", k): w for k, w in found.unknown.items()}
    excused = {(kind, key) for (c, kind, key) in EXCEPTIONS if c == chart.name}
    problems = [f"{kind}: {key} {where[:3]}" for (kind, key), where in sorted(findings.items())
                if (kind, key) not in excused]
    stale = sorted(f"{kind}: {key}" for kind, key in excused - set(findings))
    assert not problems, f"charts/{chart.name}: keys read by no template or missing from the schema: {problems}"
    assert not stale, f"exceptions that match nothing any more (remove them): {stale}"


def test_every_exception_names_a_chart() -> None:
    names = {c.name for c in CHARTS}
    assert {c for c, _, _ in EXCEPTIONS} <= names


def test_the_rules_on_a_small_chart(tmp_path: Path) -> None:
    chart = tmp_path / "demo"
    (chart / "templates").mkdir(parents=True)
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "a": {"type": "object", "additionalProperties": False, "properties": {
            "b": {"type": "string"}, "c": {"type": "string"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "viaIndex": {"type": "string"}, "viaVar": {"type": "object", "additionalProperties": False,
                                                 "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}},
        "whole": {"type": "object", "additionalProperties": False, "properties": {"k": {"type": "string"}}},
        "unused": {"type": "string"}, "n": {"type": "integer"}}}
    (chart / "values.schema.json").write_text(json.dumps(schema))
    (chart / "templates" / "x.yaml").write_text(
        '{{/* .Values.unused in a comment is no read */}}\n'
        '{{ .Values.a.b }} {{ $.Values.labels.anything }} {{ index .Values "viaIndex" }}\n'
        '{{- $v := .Values.viaVar -}} {{ $v.x }}\n'
        '{{ toYaml .Values.whole }} {{ .Values.n.deeper }} {{ .Values.missing }}\n'
        '{{- $v := dict -}} {{ $v.notValues }}\n')
    found = check_chart(chart)
    # a.c and viaVar.y are read by no template; the whole subtree of `whole` is read by toYaml
    assert found.unread == ["a.c", "unused", "viaVar.y"]
    assert sorted(found.unknown) == ["missing", "n.deeper"]
    assert [r.path for r in reads('{{ range $k, $p := .Values.pools }}{{ $p.name }}{{ end }}', "t")] == [
        ("pools", "name")]

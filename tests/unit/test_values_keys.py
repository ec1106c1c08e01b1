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
    # a range reads the list whole; its element variable reads through it
    assert [(r.path, r.whole) for r in reads('{{ range $k, $p := .Values.pools }}{{ $p.name }}{{ end }}', "t")] == [
        (("pools",), True), (("pools", "name"), False)]


def test_an_ancestor_covers_its_subtree_only_when_handed_whole(tmp_path: Path) -> None:
    chart = tmp_path / "demo"
    (chart / "templates").mkdir(parents=True)
    closed = {"type": "object", "additionalProperties": False}

    def obj(*names: str) -> dict:
        return closed | {"properties": {n: {"type": "string"} for n in names}}
    schema = closed | {"properties": {
        "tested": obj("x"), "piped": obj("x"), "ranged": obj("x"), "merged": obj("x"), "dynamic": obj("x"),
        "viaWith": obj("used", "dead"), "viaHelper": obj("used", "dead"), "viaDict": obj("used", "dead"),
        "unfollowed": obj("x"), "open": {"type": "object", "properties": {"x": {"type": "string"}}},
        "viaVar": obj("x")}}
    (chart / "values.schema.json").write_text(json.dumps(schema))
    (chart / "templates" / "_h.tpl").write_text(
        '{{- define "h.one" -}}{{ .used }}{{- end -}}\n'
        '{{- define "h.two" -}}{{- $i := .img -}}{{ $i.used }} {{ .other }}{{- end -}}\n')
    (chart / "templates" / "x.yaml").write_text(
        '{{- if .Values.tested }}{{ default "a" .Values.viaVar }}{{ end }}\n'  # a test or a default: no subtree
        '{{ .Values.piped | toYaml }} {{ range .Values.ranged }}{{ . }}{{ end }}\n'
        '{{ merge (dict) .Values.merged }} {{- range $k := list "x" }}{{ index $.Values.dynamic $k }}{{ end }}\n'
        '{{- with .Values.viaWith }}{{ .used }}{{ end }}\n'
        '{{ include "h.one" .Values.viaHelper }} {{ include "h.two" (dict "img" .Values.viaDict "other" 1) }}\n'
        '{{ include (printf "h.%s" "one") .Values.unfollowed }} {{ .Values.open }}\n')
    found = check_chart(chart)
    # read only through an ancestor that is tested, defaulted, or bound for its fields: unread
    assert found.unread == ["tested.x", "viaDict.dead", "viaHelper.dead", "viaVar.x", "viaWith.dead"]
    # handed whole (toYaml, range, merge, a key that is no literal, a helper not followed) or passed through
    assert found.via_ancestor == ["dynamic.x", "merged.x", "open.x", "piped.x", "ranged.x", "unfollowed.x"]
    assert not found.unknown

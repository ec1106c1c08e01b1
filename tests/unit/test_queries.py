"""Every PromQL expression of charts/observability parses, and names only metrics that exist.

Sources: the dashboard JSON files, the rule files (placeholders filled the way the chart fills
them), and the KEDA query the chart's helper builds. The allowed names are the fenced `metrics`
blocks of docs/metrics-sources.md (vLLM 0.32.0, DCGM exporter default counters, `up` and
kube-state-metrics, the endpoint picker of Gateway API Inference Extension v1.5.0), plus the names our own recording rules define. A renamed vLLM metric's old
name is allowed only on the right of an `or` whose left side reads the new name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml

from tests.harness.paths import CHARTS, DOCS

CHART = CHARTS / "observability"
DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))
RULE_FILES = sorted((CHART / "rules").glob("*.yaml"))
SOURCES_DOC = DOCS / "metrics-sources.md"

# Values for the ${name} placeholders of rules/*.yaml: the shapes observability.ruleParameters
# renders (label matchers, numbers, a URL).
PLACEHOLDERS = {
    "vllmSelector": 'namespace="llm",job="vllm"',
    "podSelector": 'namespace="llm",pod=~"vllm-vllm-inference-.*"',
    "dcgmSelector": 'job="dcgm-exporter"',
    "runbookBaseUrl": "https://example.invalid/docs/runbooks",
    "ttftP99Seconds": "2",
    "tpotP99Seconds": "0.1",
    "kvCacheUsage": "0.9",
    "queueDepthPerReplica": "64",
    "pricePerReplicaHourUsd": "50",
    "errorRatio": "0.05",
    "preemptionsPerSecond": "0.1",
    "restarts": "3",
}
# Grafana variables in dashboard queries, replaced by what Grafana would interpolate.
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$namespace": ".*",
    "$model": ".*",
    "$node": ".*",
}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def _metric_blocks() -> dict[str, list[str]]:
    text = SOURCES_DOC.read_text()
    blocks = dict(re.findall(r"```metrics ([\w.-]+)\n(.*?)```", text, flags=re.S))
    assert {"vllm-0.32", "renamed", "dcgm-exporter", "platform", "endpoint-picker"} <= set(blocks), \
        f"{SOURCES_DOC}: metrics blocks found: {sorted(blocks)}"
    return {name: [line.strip() for line in body.splitlines() if line.strip()] for name, body in blocks.items()}


def _series_names(lines: list[str]) -> set[str]:
    names: set[str] = set()
    for line in lines:
        name, kind = line.split()
        names.add(name)
        if kind == "histogram":
            names.update(name + suffix for suffix in HISTOGRAM_SUFFIXES)
    return names


BLOCKS = _metric_blocks()
ALLOWED = (_series_names(BLOCKS["vllm-0.32"]) | _series_names(BLOCKS["dcgm-exporter"])
           | _series_names(BLOCKS["platform"]) | _series_names(BLOCKS["endpoint-picker"]))
RENAMED = {old: new for old, _, new in (line.split() for line in BLOCKS["renamed"])}


def _fill_placeholders(text: str) -> str:
    for key, value in PLACEHOLDERS.items():
        text = text.replace("${" + key + "}", value)
    leftover = re.findall(r"\$\{[^}]*\}", text)
    assert not leftover, f"placeholders without a test value: {leftover}"
    return text


def _rule_docs() -> list[tuple[str, dict]]:
    return [(path.name, yaml.safe_load(_fill_placeholders(path.read_text()))) for path in RULE_FILES]


def _recorded_names() -> set[str]:
    return {rule["record"] for _, doc in _rule_docs() for group in doc["groups"]
            for rule in group["rules"] if "record" in rule}


def _dashboard_exprs(path: Path) -> Iterator[tuple[str, str]]:
    dashboard = json.loads(path.read_text())
    for panel in _panels(dashboard):
        for target in panel.get("targets", []):
            yield f"{path.name} panel {panel.get('title')!r} {target.get('refId')}", target["expr"]
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query) or re.fullmatch(r"label_values\((\w+)\)", query)
            assert inner, f"{path.name} variable {var['name']}: unsupported query {query!r}"
            yield f"{path.name} variable {var['name']}", inner.group(1)



def _panels(dashboard: dict) -> Iterator[dict]:
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def _grafana(expr: str) -> str:
    for var in sorted(GRAFANA_VARIABLES, key=len, reverse=True):
        expr = expr.replace(var, GRAFANA_VARIABLES[var])
    assert "$" not in expr, f"unknown Grafana variable in {expr!r}"
    return expr


def _scaler_query() -> str:
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    match = re.search(r'define "observability.scalerQuery".*?printf "(.*?)" \(include', helpers, flags=re.S)
    assert match, "observability.scalerQuery helper not found"
    template = match.group(1).replace('\\"', '"')
    return template.replace("%s", PLACEHOLDERS["vllmSelector"])


def all_expressions() -> list[tuple[str, str]]:
    exprs: list[tuple[str, str]] = []
    for path in DASHBOARDS:
        exprs += [(where, _grafana(expr)) for where, expr in _dashboard_exprs(path)]
    for name, doc in _rule_docs():
        for group in doc["groups"]:
            for rule in group["rules"]:
                exprs.append((f"{name} {rule.get('alert') or rule.get('record')}", rule["expr"]))
    exprs.append(("ScaledObject trigger", _scaler_query()))
    return exprs


EXPRESSIONS = all_expressions()


def _children(node: Any) -> list[Any]:
    if isinstance(node, promql_parser.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, promql_parser.Call):
        return list(node.args)
    if isinstance(node, promql_parser.AggregateExpr):
        return [node.expr] + ([node.param] if node.param is not None else [])
    if isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)):
        return [node.expr]
    if isinstance(node, promql_parser.MatrixSelector):
        return [node.vector_selector]
    return []


def _selectors(node: Any) -> Iterator[str]:
    if isinstance(node, promql_parser.VectorSelector):
        yield node.name
    for child in _children(node):
        yield from _selectors(child)


def _name_problems(node: Any, allowed: set[str], old_ok: set[str]) -> Iterator[str]:
    """Names outside the lists; old names outside the `or` that guards them."""
    if isinstance(node, promql_parser.VectorSelector):
        name = node.name
        if name in RENAMED or name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count") in RENAMED:
            if name not in old_ok:
                yield f"{name}: renamed metric used outside `<new name> or <old name>`"
        elif name not in allowed:
            yield f"{name}: not in vLLM 0.32, DCGM exporter, platform lists or recording rules"
        return
    if isinstance(node, promql_parser.BinaryExpr) and str(node.op) == "or":
        left = set(_selectors(node.lhs))
        guarded = {name for name in _selectors(node.rhs) if _renamed_target(name) in left}
        yield from _name_problems(node.lhs, allowed, old_ok)
        yield from _name_problems(node.rhs, allowed, old_ok | guarded)
        return
    for child in _children(node):
        yield from _name_problems(child, allowed, old_ok)


def _renamed_target(name: str) -> str | None:
    for suffix in ("", *HISTOGRAM_SUFFIXES):
        base = name.removesuffix(suffix) if suffix else name
        if base in RENAMED and (not suffix or name.endswith(suffix)):
            return RENAMED[base] + suffix
    return None


def test_expressions_were_found() -> None:
    sources = {where.split()[0] for where, _ in EXPRESSIONS}
    assert DASHBOARDS and RULE_FILES, "no dashboards or rule files found"
    assert len(EXPRESSIONS) >= 30, f"only {len(EXPRESSIONS)} expressions collected from {sorted(sources)}"


def test_endpoint_picker_panels_are_checked() -> None:
    """The dashboard's picker row is among the expressions parsed and name-checked below: one
    query per picker signal, histograms read through their series."""
    picker = [expr for where, expr in EXPRESSIONS if "inference_" in expr]
    names = {name for expr in picker for name in _selectors(promql_parser.parse(expr))}
    assert {"inference_pool_average_queue_size", "inference_pool_average_kv_cache_utilization",
            "inference_pool_ready_pods", "inference_objective_request_total",
            "inference_extension_scheduler_e2e_duration_seconds_bucket",
            "inference_extension_prefix_indexer_hit_ratio_bucket"} <= names, sorted(names)
    assert not names - _series_names(BLOCKS["endpoint-picker"]), sorted(names)


@pytest.mark.parametrize(("where", "expr"), EXPRESSIONS, ids=[w for w, _ in EXPRESSIONS])
def test_expression_parses_and_uses_known_metrics(where: str, expr: str) -> None:
    try:
        ast = promql_parser.parse(expr)
    except Exception as exc:  # the parser raises ValueError/RuntimeError subclasses
        pytest.fail(f"{where}: PromQL does not parse: {exc}\n{expr}")
    allowed = ALLOWED | _recorded_names()
    problems = sorted(set(_name_problems(ast, allowed, set())))
    assert not problems, f"{where}:\n  " + "\n  ".join(problems) + f"\n{expr}"


def test_renamed_metrics_are_queried_under_both_names() -> None:
    """Every query reading a renamed metric's new name also reads the old one (the 70B-on-EKS guide, §7)."""
    for where, expr in EXPRESSIONS:
        names = set(_selectors(promql_parser.parse(expr)))
        for old, new in RENAMED.items():
            for suffix in ("", *HISTOGRAM_SUFFIXES):
                if new + suffix in names:
                    assert old + suffix in names, f"{where}: reads {new + suffix} but not {old + suffix}"


# vLLM's renames, by meaning. vllm:time_per_output_token_seconds measured the time between engine
# iterations of a stream; vLLM renamed it vllm:inter_token_latency_seconds (deprecated in 0.11 by
# vllm-project/vllm#24110, removed by #32661). vllm:request_time_per_output_token_seconds is a
# different metric (one observation per finished request: its decode time over its output tokens),
# not the new name of anything.
EXPECTED_RENAMES = {
    "vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc",
    "vllm:time_per_output_token_seconds": "vllm:inter_token_latency_seconds",
}
NOT_A_RENAME = "vllm:request_time_per_output_token_seconds"


def test_the_renamed_block_pairs_names_by_meaning() -> None:
    assert RENAMED == EXPECTED_RENAMES, f"docs/metrics-sources.md renamed block: {RENAMED}"


def _base_names(expr: str) -> set[str]:
    names = set(_selectors(promql_parser.parse(expr)))
    return {n.removesuffix(s) for n in names for s in HISTOGRAM_SUFFIXES if n.endswith(s)} | names


def test_each_query_reads_both_names_of_a_renamed_pair_and_never_the_per_request_metric() -> None:
    """Both directions: a query that reads either name of a rename reads the other, and a query on
    the inter-token latency pair does not mix in the per-request TPOT histogram."""
    for where, expr in EXPRESSIONS:
        names = _base_names(expr)
        for old, new in EXPECTED_RENAMES.items():
            if old in names or new in names:
                assert {old, new} <= names, f"{where}: reads one of {old} / {new} but not both\n{expr}"
        itl = {"vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds"}
        assert not (itl & names and NOT_A_RENAME in names), \
            f"{where}: pairs {NOT_A_RENAME} (per-request) with the inter-token latency histogram\n{expr}"


def test_tpot_recording_rules_read_the_inter_token_latency_pair() -> None:
    tpot = [expr for where, expr in EXPRESSIONS if "vllm_tpot_seconds" in where]
    assert tpot, "no TPOT recording rule found"
    for expr in tpot:
        assert {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"} <= _base_names(expr)


def test_name_check_rejects_unknown_and_unguarded_names() -> None:
    """The checker itself: it must flag what the chart must never contain."""
    allowed = ALLOWED
    bad = {
        "vllm:not_a_metric": "not in",
        "vllm:gpu_cache_usage_perc": "renamed metric",
        "vllm:gpu_cache_usage_perc or vllm:kv_cache_usage_perc": "renamed metric",
        "vllm:num_requests_waiting or vllm:gpu_cache_usage_perc": "renamed metric",
    }
    for expr, message in bad.items():
        problems = list(_name_problems(promql_parser.parse(expr), allowed, set()))
        assert problems and message in problems[0], (expr, problems)
    good = "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc"
    assert not list(_name_problems(promql_parser.parse(good), allowed, set()))


# --- dashboard JSON structure ---------------------------------------------------------------

def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_dashboard_uids_are_unique() -> None:
    uids = [_load(path).get("uid") for path in DASHBOARDS]
    assert all(uids), f"dashboards without uid: {[p.name for p, u in zip(DASHBOARDS, uids) if not u]}"
    assert len(uids) == len(set(uids)), f"duplicate dashboard uids: {uids}"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_structure(path: Path) -> None:
    dashboard = _load(path)
    assert dashboard.get("title"), f"{path.name}: no title"
    panels = list(_panels(dashboard))
    ids = [panel.get("id") for panel in panels]
    assert len(ids) == len(set(ids)) and None not in ids, f"{path.name}: panel ids not unique: {ids}"
    drawn = [panel for panel in panels if panel.get("type") != "row"]
    assert drawn, f"{path.name}: no panels"
    for panel in drawn:
        title = panel.get("title")
        assert panel.get("datasource", {}).get("uid") == "${datasource}", f"{path.name} {title!r}: datasource"
        targets = panel.get("targets") or []
        assert targets, f"{path.name} {title!r}: no targets"
        for target in targets:
            assert target.get("expr"), f"{path.name} {title!r}: target without expr"
            assert target.get("datasource", {}).get("uid") == "${datasource}", f"{path.name} {title!r}: target datasource"
        refs = [t["refId"] for t in targets]
        assert len(refs) == len(set(refs)), f"{path.name} {title!r}: duplicate refIds {refs}"
    variables = {var["name"]: var for var in dashboard["templating"]["list"]}
    assert {"datasource", "namespace", "model"} <= set(variables), f"{path.name}: variables {sorted(variables)}"
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"


def test_serving_dashboard_has_the_seed_panels() -> None:
    """The 70B-on-EKS guide's four panels plus the ones issue 6 asks for, found by the metric they read."""
    exprs = " ".join(expr for where, expr in EXPRESSIONS if where.startswith("vllm-serving.json panel"))
    for needle in ("vllm_ttft_seconds:p99", "vllm_tpot_seconds:p99", "vllm:num_requests_waiting",
                   "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                   "vllm:num_requests_running", "vllm:num_preemptions_total", "vllm:prefix_cache_hits_total",
                   'finished_reason=~"error|abort"', "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_XID_ERRORS"):
        assert needle in exprs, f"serving dashboard has no panel reading {needle}"


def test_dcgm_block_is_the_counters_file_gpu_infra_ships() -> None:
    """The DCGM names the queries may use are exactly what charts/gpu-infra's collectors file asks
    the exporter for (label-type lines excluded: they become labels, not series)."""
    shipped = []
    for line in (CHARTS / "gpu-infra" / "files" / "dcgm-counters.csv").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            field, kind, _help = (part.strip() for part in line.split(",", 2))
            if kind != "label":
                shipped.append(f"{field} {kind}")
    assert BLOCKS["dcgm-exporter"] == shipped, "docs/metrics-sources.md dcgm-exporter block differs from " \
        "charts/gpu-infra/files/dcgm-counters.csv"

"""Every PromQL query the observability chart ships, read from its rendered output: dashboard
panels and template variables (ConfigMaps holding Grafana JSON), recording and alerting rules
(PrometheusRule), KEDA triggers (ScaledObject). The code iterates over whatever the chart
renders; a new dashboard, rule group or trigger is picked up without changes here."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import promql_parser

# Grafana's built-in interval variables, as Grafana would expand them for a short time range
# with a 1 s scrape interval ($__rate_interval is at least four scrape intervals; one minute
# keeps several samples in every window of the short load run).
GRAFANA_BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m",
                    "__interval_ms": "15000", "__range_s": "300"}
_VAR = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)")
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(?P<q>.+),\s*)?(?P<label>\w+)\s*\)\s*$", re.S)


@dataclass(frozen=True)
class Query:
    source: str  # "dashboard <uid> panel <title>", "rule <group>/<name>", "keda <name>"
    kind: str  # panel, variable, record, alert, keda
    expr: str  # as shipped
    name: str = ""  # recorded series or alert name

    def label(self) -> str:
        return f"{self.kind} {self.source}"


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    doc: dict[str, Any]


def dashboards(objects: list[dict[str, Any]]) -> list[Dashboard]:
    out = []
    for obj in objects:
        if obj.get("kind") != "ConfigMap":
            continue
        for key, text in (obj.get("data") or {}).items():
            if not key.endswith(".json"):
                continue
            doc = json.loads(text)
            if isinstance(doc, dict) and "panels" in doc:
                out.append(Dashboard(doc.get("uid", key), doc.get("title", key), doc))
    return out


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for p in panels:
        yield p
        yield from _panels(p.get("panels") or [])


def dashboard_queries(d: Dashboard) -> list[Query]:
    out = []
    for p in _panels(d.doc.get("panels") or []):
        for t in p.get("targets") or []:
            if t.get("expr"):
                out.append(Query(f"dashboard {d.uid} panel {p.get('title')!r} ref {t.get('refId')}",
                                 "panel", t["expr"]))
    for v in (d.doc.get("templating") or {}).get("list") or []:
        if v.get("type") == "query":
            q = v.get("query")
            text = q.get("query") if isinstance(q, dict) else q
            if text:
                out.append(Query(f"dashboard {d.uid} variable ${v['name']}", "variable", text,
                                 v["name"]))
    return out


def rule_groups(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [g for obj in objects if obj.get("kind") == "PrometheusRule"
            for g in obj["spec"].get("groups") or []]


def rule_queries(objects: list[dict[str, Any]]) -> list[Query]:
    out = []
    for g in rule_groups(objects):
        for r in g.get("rules") or []:
            if "record" in r:
                out.append(Query(f"rule {g['name']}/{r['record']}", "record", r["expr"], r["record"]))
            elif "alert" in r:
                out.append(Query(f"rule {g['name']}/{r['alert']}", "alert", r["expr"], r["alert"]))
    return out


def keda_queries(objects: list[dict[str, Any]]) -> list[Query]:
    out = []
    for obj in objects:
        if obj.get("kind") != "ScaledObject":
            continue
        for t in obj["spec"].get("triggers") or []:
            if t.get("type") == "prometheus":
                out.append(Query(f"keda {obj['metadata']['name']} trigger {t.get('name')}", "keda",
                                 t["metadata"]["query"]))
    return out


def all_queries(objects: list[dict[str, Any]]) -> list[Query]:
    qs: list[Query] = []
    for d in dashboards(objects):
        qs += dashboard_queries(d)
    return qs + rule_queries(objects) + keda_queries(objects)


# ---------------------------------------------------------------------------------------------
# Grafana variables

def expand_grafana(expr: str, variables: dict[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        if name in GRAFANA_BUILTINS:
            return GRAFANA_BUILTINS[name]
        if name in variables:
            return variables[name]
        raise KeyError(f"dashboard variable ${name} has no value")
    return _VAR.sub(repl, expr)


def label_values_query(text: str) -> tuple[str | None, str]:
    """label_values(selector, label) -> (selector or None, label)."""
    m = _LABEL_VALUES.match(text)
    if not m:
        raise ValueError(f"unsupported variable query {text!r} (expected label_values(...))")
    return m.group("q"), m.group("label")


# ---------------------------------------------------------------------------------------------
# PromQL structure

def _children(node: Any) -> list[Any]:
    if isinstance(node, promql_parser.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, (promql_parser.AggregateExpr, promql_parser.ParenExpr,
                         promql_parser.UnaryExpr, promql_parser.SubqueryExpr)):
        return [node.expr]
    if isinstance(node, promql_parser.Call):
        return list(node.args)
    if isinstance(node, promql_parser.MatrixSelector):
        return [node.vector_selector]
    return []


def selectors(node: Any) -> list[Any]:
    if isinstance(node, promql_parser.VectorSelector):
        return [node]
    return [s for c in _children(node) for s in selectors(c)]


def metric_names(expr: str) -> set[str]:
    return {s.name for s in selectors(promql_parser.parse(expr)) if s.name}


def or_branches(expr: str) -> list[tuple[str, str]]:
    """(lhs, rhs) of every `or` in the expression, as PromQL text."""
    out = []

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.BinaryExpr) and str(node.op) == "or":
            out.append((str(node.lhs), str(node.rhs)))
        for c in _children(node):
            visit(c)
    visit(promql_parser.parse(expr))
    return out


def depends_on(expr: str, predicate: Callable[[str], bool], recorded: dict[str, str]) -> bool:
    """Does the expression select a metric satisfying predicate, directly or through the
    recording rules it reads?"""
    for name in metric_names(expr):
        if predicate(name):
            return True
        if name in recorded and depends_on(recorded[name], predicate, recorded):
            return True
    return False

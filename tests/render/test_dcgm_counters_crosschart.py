"""The DCGM exporter of charts/gpu-infra serves every DCGM series charts/observability queries:
the rendered exporter reads the chart's counters ConfigMap (mounted, named by
DCGM_EXPORTER_COLLECTORS), and each DCGM_* name in the rendered PrometheusRule and dashboards is an
uncommented line of that file. A metric missing from the file is simply never exported, so an alert
on it would stay silent forever."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import promql_parser
import pytest

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

OBS_VALUES = sorted((CHARTS / "observability" / "ci").glob("*-values.yaml")) + sorted(VALUES.glob("*/observability.yaml"))
GPU_VALUES = sorted((CHARTS / "gpu-infra" / "ci").glob("*-values.yaml")) + sorted(VALUES.glob("*/gpu-infra.yaml"))
# Values Grafana or the rule engine would put in place of the dashboard variables.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$namespace": ".*", "$model": ".*",
                     "$node": ".*", "$datasource": "x"}


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _exporter(objects: list[dict]) -> dict | None:
    return next((o for o in objects if o["kind"] == "DaemonSet"
                 and o["metadata"]["name"].endswith("-dcgm-exporter")), None)


def _counters_served(objects: list[dict]) -> set[str]:
    """DCGM field names the exporter of one gpu-infra render is told to collect."""
    exporter = _exporter(objects)
    assert exporter is not None, "no DCGM exporter DaemonSet"
    pod = exporter["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    path = env.get("DCGM_EXPORTER_COLLECTORS")
    assert path, "the exporter has no DCGM_EXPORTER_COLLECTORS: it would serve its built-in defaults"
    directory, key = path.rsplit("/", 1)
    mount = next((m for m in container["volumeMounts"] if m["mountPath"] == directory), None)
    assert mount, f"{path}: no volume mounted at {directory}"
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    name = volume.get("configMap", {}).get("name")
    config_map = next((o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name), None)
    assert config_map is not None, f"volume {mount['name']}: ConfigMap {name} is not rendered"
    assert key in config_map["data"], f"ConfigMap {name} has no key {key}"
    fields = set()
    for line in config_map["data"][key].splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            fields.add(line.split(",", 1)[0].strip())
    return fields


def _selector_names(expr: str) -> set[str]:
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            names.add(node.name)
        for attr in ("lhs", "rhs", "expr", "vector_selector", "param"):
            child = getattr(node, attr, None)
            if child is not None and not isinstance(child, (str, int, float)):
                walk(child)
        for arg in getattr(node, "args", None) or []:
            walk(arg)

    walk(promql_parser.parse(expr))
    return names


def _queried_dcgm_names(objects: list[dict]) -> set[str]:
    exprs = [rule["expr"] for o in objects if o["kind"] == "PrometheusRule"
             for group in o["spec"]["groups"] for rule in group["rules"]]
    for o in objects:
        if o["kind"] != "ConfigMap":
            continue
        for text in (o.get("data") or {}).values():
            try:
                dashboard = json.loads(text)
            except ValueError:
                continue
            for panel in dashboard.get("panels", []) + [p for row in dashboard.get("panels", []) for p in row.get("panels", [])]:
                for target in panel.get("targets", []):
                    expr = target["expr"]
                    for var in sorted(GRAFANA_VARIABLES, key=len, reverse=True):
                        expr = expr.replace(var, GRAFANA_VARIABLES[var])
                    exprs.append(expr)
    return {name for expr in exprs for name in _selector_names(expr) if name.startswith("DCGM_")}


@functools.lru_cache(maxsize=None)
def _default_counters() -> frozenset[str]:
    return frozenset(_counters_served(helm.render(CHARTS / "gpu-infra", [GPU_VALUES[0]], namespace="gpu-infra")))


@pytest.mark.parametrize("values_file", GPU_VALUES, ids=_id)
def test_the_exporter_reads_the_charts_counters_with_the_xid_count(values_file: Path) -> None:
    objects = helm.render(CHARTS / "gpu-infra", [values_file], namespace="gpu-infra")
    if _exporter(objects) is None:
        return  # dcgmExporter.enabled: false in this file; nothing to feed
    served = _counters_served(objects)
    assert "DCGM_EXP_XID_ERRORS_COUNT" in served, sorted(served)
    env = {e["name"]: e.get("value") for e in _exporter(objects)["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert re.fullmatch(r"[1-9][0-9]*", env.get("DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE") or ""), env


@pytest.mark.parametrize("values_file", OBS_VALUES, ids=_id)
def test_every_dcgm_metric_observability_queries_is_served(values_file: Path) -> None:
    objects = helm.render(CHARTS / "observability", [values_file], namespace="llm")
    queried = _queried_dcgm_names(objects)
    missing = queried - _default_counters()
    assert not missing, f"{_id(values_file)} queries DCGM series the exporter is not told to collect: {sorted(missing)}"


def test_the_alerts_query_the_windowed_xid_count() -> None:
    """Guards the check above against passing vacuously: the default render queries DCGM series,
    the XID alerts among them."""
    objects = helm.render(CHARTS / "observability", [OBS_VALUES[0]], namespace="llm")
    assert "DCGM_EXP_XID_ERRORS_COUNT" in _queried_dcgm_names(objects)

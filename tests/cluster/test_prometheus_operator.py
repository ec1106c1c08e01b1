"""The Prometheus Operator (v0.93.0, built from its Go module) selects the observability chart's
ServiceMonitors, PodMonitors and PrometheusRules and writes them into Prometheus's configuration.

The Prometheus object is the one kube-prometheus-stack creates with its defaults
(`*SelectorNilUsesHelmValues: true`): monitors and rules selected by `release: <its release
name>` in every namespace. For every committed scenario the observability package is installed
with the scenario's values, and the test reads what the operator generated:
- the `prometheus-<name>` Secret's `prometheus.yaml.gz`: one scrape job per monitor endpoint
  (`serviceMonitor/<ns>/<name>/<i>`, `podMonitor/<ns>/<name>/<i>`), each discovering its targets
  through the Kubernetes API in the namespaces its monitor selects;
- the `prometheus-<name>-rulefiles-*` ConfigMaps: every rule group of every PrometheusRule,
  checked by the real `promtool check rules`.
A second Prometheus with another release label shows the common failure: it selects none of them.

The operator's StatefulSet pods stay Pending (no node offers what Prometheus asks for); only
the generated configuration matters here. The engine tier runs a real Prometheus against real
vLLM servers with the same rules (tests/engine/test_metrics.py)."""

from __future__ import annotations

import base64
import gzip
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster import scenarios
from tests.cluster.conftest import _crd_dir
from tests.cluster.controlplane import PROMETHEUS_OPERATOR, missing_prometheus_operator, prometheus_operator_crd_dir
from tests.cluster.flows import cleanup
from tests.cluster.kube import Cluster
from tests.harness.tools import require_tool

pytestmark = pytest.mark.cluster

HELM = "helm4"
MONITORING = "monitoring"
PROMETHEUS = "kube-prometheus-stack-prometheus"      # kube-prometheus-stack's Prometheus object name
RELEASE_LABEL = {"release": "kube-prometheus-stack"}  # what its defaults select on
OTHER = "other-prometheus"
SCENARIOS = [s for s in scenarios.discover() if s.values("observability")]
_SELECTED: dict[str, tuple[int, int]] = {}


def prometheus(name: str, labels: dict[str, str]) -> dict[str, Any]:
    selector = {"matchLabels": labels}
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
        "metadata": {"name": name, "namespace": MONITORING},
        "spec": {
            "serviceMonitorSelector": selector, "serviceMonitorNamespaceSelector": {},
            "podMonitorSelector": selector, "podMonitorNamespaceSelector": {},
            "ruleSelector": selector, "ruleNamespaceSelector": {},
            "probeSelector": selector, "scrapeConfigSelector": selector,
        },
    }


@pytest.fixture(scope="module")
def operator(cluster: Cluster) -> Iterator[Cluster]:
    missing = missing_prometheus_operator()
    if missing:
        pytest.fail(f"Prometheus Operator missing: {', '.join(missing)}; run `make cluster-tools` (tools/cluster/"
                    "build.sh builds it from github.com/prometheus-operator/prometheus-operator)", pytrace=False)
    swapped = cluster.apply_crds(prometheus_operator_crd_dir())
    cluster.ensure_namespace(MONITORING)
    try:
        cluster.stats.timings["prometheus_operator_s"] = cluster.plane.start_prometheus_operator()
        for name, labels in ((PROMETHEUS, RELEASE_LABEL), (OTHER, {"release": "other"})):
            cluster.create(prometheus(name, labels), MONITORING)
        yield cluster
    finally:
        cluster.plane.stop_component(PROMETHEUS_OPERATOR)
        cluster.delete_namespace(MONITORING, wait=True)
        cluster.delete_crds([n for n, replaced in swapped.items() if not replaced])
        cluster.apply_crds(_crd_dir(), only=[n for n, replaced in swapped.items() if replaced])


def generated_config(c: Cluster, name: str) -> dict[str, Any] | None:
    try:
        secret = c.core.read_namespaced_secret(f"prometheus-{name}", MONITORING)
    except Exception:  # noqa: BLE001 - not written yet
        return None
    raw = (secret.data or {}).get("prometheus.yaml.gz")
    return yaml.safe_load(gzip.decompress(base64.b64decode(raw))) if raw else None


def generated_rule_files(c: Cluster, name: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for cm in c.core.list_namespaced_config_map(MONITORING).items:
        if cm.metadata.name.startswith(f"prometheus-{name}-rulefiles-"):
            files.update(cm.data or {})
    return files


def expected_jobs(objects: list[dict[str, Any]], namespace: str) -> set[str]:
    jobs = set()
    for o in objects:
        kind = {"ServiceMonitor": "serviceMonitor", "PodMonitor": "podMonitor"}.get(o["kind"])
        if kind:
            endpoints = o["spec"].get("endpoints") or o["spec"].get("podMetricsEndpoints") or []
            jobs |= {f"{kind}/{namespace}/{o['metadata']['name']}/{i}" for i in range(len(endpoints))}
    return jobs


def expected_groups(objects: list[dict[str, Any]]) -> set[str]:
    return {g["name"] for o in objects if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"]}


def wait_for(c: Cluster, jobs: set[str], groups: set[str], timeout_s: float = 120) -> tuple[dict[str, Any], dict[str, str]]:
    deadline = time.monotonic() + timeout_s
    while True:
        config = generated_config(c, PROMETHEUS) or {}
        have_jobs = {j["job_name"] for j in config.get("scrape_configs") or []}
        files = generated_rule_files(c, PROMETHEUS)
        have_groups = {g["name"] for text in files.values() for g in (yaml.safe_load(text) or {}).get("groups", [])}
        if jobs <= have_jobs and groups <= have_groups:
            return config, files
        if time.monotonic() > deadline:
            log = c.plane.log_tail(PROMETHEUS_OPERATOR, 15)
            pytest.fail(f"the operator did not select every monitor and rule: jobs missing {sorted(jobs - have_jobs)}, "
                        f"rule groups missing {sorted(groups - have_groups)}\n--- operator log ---\n{log}")
        time.sleep(2)


def promtool(*args: str) -> str:
    proc = subprocess.run([str(require_tool("promtool")), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"promtool {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_operator_selects_every_monitor_and_rule(operator: Cluster, scenario: scenarios.Scenario, tmp_path: Path) -> None:
    c, ns = operator, scenario.namespace
    c.ensure_namespace(ns)
    release = "observability"
    try:
        c.helm(HELM, ["install", release, scenarios.chart_package("observability"), "--namespace", ns,
                      "--values", str(scenario.values("observability"))])
        objects = c.helm_manifest(HELM, release, ns)
        labels = {o["kind"]: o["metadata"].get("labels", {}) for o in objects}
        monitors_and_rules = [o for o in objects if o["kind"] in ("ServiceMonitor", "PodMonitor", "PrometheusRule")]
        assert monitors_and_rules, f"{scenario.name}: the observability chart rendered no monitors or rules"
        for o in monitors_and_rules:
            assert RELEASE_LABEL.items() <= o["metadata"].get("labels", {}).items(), (o["kind"], labels)
        jobs, groups = expected_jobs(objects, ns), expected_groups(objects)
        config, files = wait_for(c, jobs, groups)

        # Each job discovers its targets through the Kubernetes API, in the namespaces its monitor
        # names (none listed: namespaceSelector any)
        # (promtool cannot check this config: Debian's Prometheus 2.42 build leaves Kubernetes
        # service discovery out, and the operator writes for Prometheus v3).
        for job in (j for j in config["scrape_configs"] if j["job_name"] in jobs):
            (sd,) = job["kubernetes_sd_configs"]
            role = "pod" if job["job_name"].startswith("podMonitor/") else "endpoints"
            assert sd["role"] in (role, "endpointslice"), (job["job_name"], sd)
            assert "namespaces" not in sd or sd["namespaces"]["names"], (job["job_name"], sd)
        rule_files = []
        for key, text in files.items():
            if any(g["name"] in groups for g in (yaml.safe_load(text) or {}).get("groups", [])):
                (tmp_path / key).write_text(text)
                rule_files.append(str(tmp_path / key))
        promtool("check", "rules", *rule_files)

        other = {j["job_name"] for j in (generated_config(c, OTHER) or {}).get("scrape_configs") or []}
        assert not other & jobs, f"a Prometheus selecting release=other picked {sorted(other & jobs)}"
        _SELECTED[scenario.name] = (len(jobs), len(groups))
        print(f"{scenario.name}: the operator wrote {len(jobs)} scrape jobs ({', '.join(sorted(jobs))}) and "
              f"{len(groups)} rule groups in {len(rule_files)} rule files (promtool accepts them); "
              f"the release=other Prometheus selected none")
    finally:
        cleanup(c, HELM, ns)

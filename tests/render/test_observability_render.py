"""charts/observability: lint and render every ci/ and values/<scenario>/ file with Helm 3 and 4,
validate every object strictly (prometheus-operator and KEDA CRDs, Kubernetes 1.31-1.35), and
check what each topology must render, the KEDA safety rules and the values errors."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import yaml

from tests.harness import helm, validate_all
from tests.harness.paths import CHARTS, ROOT, VALUES
from vllm_eks.values.observability import ObservabilityValues
from vllm_eks.values.schema import render_schema

pytestmark = pytest.mark.render

CHART = CHARTS / "observability"
NAMESPACE = "llm"
CI_FILES = sorted((CHART / "ci").glob("*-values.yaml"))
SCENARIO_FILES = sorted(VALUES.glob("*/observability.yaml"))
ALL_FILES = CI_FILES + SCENARIO_FILES
MONITORING_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule", "ScaledObject",
                    "TriggerAuthentication", "ConfigMap"}


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@functools.lru_cache(maxsize=None)
def _render(values_file: Path, helm_name: str = "helm4") -> tuple[dict, ...]:
    return tuple(helm.render(CHART, [values_file], helm=helm_name, release="vllm", namespace=NAMESPACE))


def _values(values_file: Path) -> ObservabilityValues:
    return ObservabilityValues.model_validate(yaml.safe_load(values_file.read_text()) or {})


def _of_kind(objects, kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def test_ci_files_exist() -> None:
    assert len(CI_FILES) >= 5, f"expected ci/NN-purpose-values.yaml scenarios in {CHART / 'ci'}"
    for path in CI_FILES:
        assert path.read_text().startswith("# Purpose:"), f"{_id(path)}: first line must state its purpose"


def test_committed_scenarios_exist() -> None:
    assert SCENARIO_FILES, "no values/<scenario>/observability.yaml committed: run `make values`"


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_lint_strict(values_file: Path, helm_version: str) -> None:
    helm.lint(CHART, [values_file], helm=helm_version)


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_render_validates_strictly(values_file: Path, helm_version: str, crd_registry, kube_version: str) -> None:
    objects = list(_render(values_file, helm_version))
    assert objects, f"{_id(values_file)} rendered nothing"
    assert {o["kind"] for o in objects} <= MONITORING_KINDS, {o["kind"] for o in objects}
    report = validate_all(objects, crd_registry, kube_version=kube_version)
    assert report.total == len(objects), report.summary()


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_helm3_and_helm4_render_the_same(values_file: Path) -> None:
    assert _render(values_file, "helm3") == _render(values_file, "helm4")


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_topology_objects(values_file: Path) -> None:
    """Which monitor scrapes the model server, and what is scaled, per topology."""
    values = _values(values_file)
    objects = _render(values_file)
    service_monitors = {o["metadata"]["name"]: o for o in _of_kind(objects, "ServiceMonitor")}
    pod_monitors = _of_kind(objects, "PodMonitor")
    scaled = _of_kind(objects, "ScaledObject")
    vllm_sm = [o for name, o in service_monitors.items() if name.endswith("-vllm")]
    if not values.monitors.vllm.enabled:
        assert not vllm_sm and not pod_monitors
    elif values.topology == "single-node":
        assert len(vllm_sm) == 1 and not pod_monitors
    elif values.topology == "multi-node":
        assert not vllm_sm and len(pod_monitors) == 1
        labels = pod_monitors[0]["spec"]["selector"]["matchLabels"]
        assert labels.get("leaderworkerset.sigs.k8s.io/worker-index") == "0", "workers serve no /metrics"
    else:  # ray-serve, and disaggregated (which runs as a RayService too)
        assert not vllm_sm and len(pod_monitors) == 1
        endpoint = pod_monitors[0]["spec"]["podMetricsEndpoints"][0]
        assert endpoint["port"] == "metrics"
        rename = endpoint["metricRelabelings"][-1]
        assert rename["regex"] == "ray_vllm_(.+)" and rename["replacement"] == "vllm:$1"
        assert rename["targetLabel"] == "__name__"
    if values.topology in {"ray-serve", "disaggregated"} or not values.autoscaling.enabled:
        assert not scaled, "Ray Serve scales itself, disaggregated pools keep their planned replicas"
    else:
        assert len(scaled) == 1
        ref = scaled[0]["spec"]["scaleTargetRef"]
        expected = (("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet") if values.topology == "multi-node"
                    else ("apps/v1", "Deployment"))
        assert (ref["apiVersion"], ref["kind"]) == expected
    assert bool(_of_kind(objects, "PrometheusRule")) == values.rules.enabled
    assert bool(_of_kind(objects, "ConfigMap")) == values.dashboards.enabled
    assert ("dcgm" in " ".join(service_monitors)) == values.monitors.dcgm.enabled
    assert any(name.endswith("-endpoint-picker") for name in service_monitors) == values.monitors.picker.enabled


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_monitors_carry_the_prometheus_selector_labels(values_file: Path) -> None:
    values = _values(values_file)
    for obj in _render(values_file):
        if obj["kind"] in {"ServiceMonitor", "PodMonitor", "PrometheusRule"}:
            labels = obj["metadata"]["labels"]
            for key, value in values.prometheus.monitor_labels.items():
                assert labels.get(key) == value, f"{obj['kind']} {obj['metadata']['name']}: label {key}"
        if obj["kind"] in {"ServiceMonitor", "PodMonitor"}:
            endpoints = obj["spec"].get("endpoints") or obj["spec"]["podMetricsEndpoints"]
            job = endpoints[0]["relabelings"][0]
            assert job["targetLabel"] == "job" and job["replacement"] in {
                values.metrics.job, values.monitors.dcgm.job, values.monitors.picker.job}


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_scaled_object_follows_the_seed_and_does_not_flap(values_file: Path) -> None:
    values = _values(values_file)
    for obj in _of_kind(_render(values_file), "ScaledObject"):
        spec = obj["spec"]
        trigger = spec["triggers"][0]
        assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
        query = trigger["metadata"]["query"]
        assert query.startswith("sum(vllm:num_requests_waiting{") and 'job="' in query and 'namespace="' in query
        assert trigger["metadata"]["threshold"] == str(values.autoscaling.threshold)
        assert spec["cooldownPeriod"] >= 600
        assert spec["minReplicaCount"] >= 1 or values.autoscaling.allow_scale_to_zero
        assert spec["maxReplicaCount"] >= spec["minReplicaCount"]
        behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 600
        assert [p["value"] for p in behavior["scaleDown"]["policies"]] == [1], "remove one replica at a time"
        assert behavior["scaleUp"]["stabilizationWindowSeconds"] > 0
        if values.autoscaling.fallback.enabled:
            assert spec["fallback"]["failureThreshold"] >= 1
            assert spec["fallback"]["replicas"] <= spec["maxReplicaCount"]
        assert obj["metadata"]["namespace"] == (values.target.namespace or NAMESPACE)


@pytest.mark.parametrize("values_file", ALL_FILES, ids=_id)
def test_dashboards_are_packaged_from_the_sources(values_file: Path) -> None:
    values = _values(values_file)
    configmaps = _of_kind(_render(values_file), "ConfigMap")
    if not values.dashboards.enabled:
        assert not configmaps
        return
    sources = {p.stem: json.loads(p.read_text()) for p in (CHART / "dashboards").glob("*.json")}
    packaged = {key: text for cm in configmaps for key, text in cm["data"].items()}
    assert len(packaged) == len(sources)
    for key, text in packaged.items():
        dashboard = json.loads(text)
        (stem,) = [s for s in sources if key.startswith(f"{s}-")]
        assert key == f"{dashboard['uid']}.json", "the sidecar's file name is the release's uid"
        source = sources[stem]
        assert dashboard["title"] == f"{source['title']} ({NAMESPACE}/vllm)"
        rest = {k: v for k, v in dashboard.items() if k not in ("uid", "title")}
        assert rest == {k: v for k, v in source.items() if k not in ("uid", "title")}, f"{key} differs from its source"
        assert len(text.encode()) < 1024 * 1024, f"{key}: over the ConfigMap size limit"
    for cm in configmaps:
        for key, value in values.dashboards.sidecar_labels.items():
            assert cm["metadata"]["labels"].get(key) == value


def test_chart_values_yaml_is_the_model_default() -> None:
    """values.yaml documents the model's defaults: the two must not drift apart."""
    on_disk = yaml.safe_load((CHART / "values.yaml").read_text())
    model = ObservabilityValues.model_validate(on_disk)
    assert model == ObservabilityValues()


def test_values_schema_is_generated_from_the_model() -> None:
    on_disk = json.loads((CHART / "values.schema.json").read_text())
    assert on_disk == json.loads(render_schema(ObservabilityValues, on_disk.get("title", "observability values")))


# --- values errors: one message naming the key ----------------------------------------------

BAD_VALUES = [
    ({"autoscaling": {"minReplicaCount": 0}}, "autoscaling.minReplicaCount"),
    ({"autoscaling": {"minReplicaCount": 0, "allowScaleToZero": True}}, "autoscaling.extraTriggers"),
    ({"autoscaling": {"cooldownPeriod": 300}}, "autoscaling.cooldownPeriod"),
    ({"autoscaling": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}},
     "autoscaling.behavior.scaleDown.stabilizationWindowSeconds"),
    ({"autoscaling": {"minReplicaCount": 5, "maxReplicaCount": 2}}, "autoscaling.maxReplicaCount"),
    ({"autoscaling": {"triggerAuthentication": {"enabled": True}}}, "autoscaling.triggerAuthentication"),
    ({"metrics": {"job": ""}}, "metrics.job"),
    ({"metrics": {"interval": "15s", "scrapeTimeout": "1m"}}, "metrics.scrapeTimeout"),
    ({"metrics": {"interval": "1m", "scrapeTimeout": "1m0s500ms"}}, "metrics.scrapeTimeout"),
    ({"rules": {"podRegex": "vllm-(?!prefill).*"}}, "rules.podRegex"),  # lookahead: not RE2
    ({"rules": {"podRegex": "(vllm)-\\1"}}, "rules.podRegex"),  # backreference: not RE2
    ({"rules": {"podRegex": "vllm-[a-"}}, "rules.podRegex"),
    # every alert flattened to one severity, e.g. none, would page for nothing
    ({"rules": {"additionalAlertLabels": {"severity": "none"}}}, "rules.additionalAlertLabels.severity"),
    ({"rules": {"additionalAlertLabels": {"team": "ml", "alertname": "x"}}}, "rules.additionalAlertLabels.alertname"),
    ({"dashboards": {"sidecarLabels": {"app.kubernetes.io/name": "x"}}}, "dashboards.sidecarLabels.app.kubernetes.io/name"),
    ({"prometheus": {"monitorLabels": {"helm.sh/chart": "x"}}}, "prometheus.monitorLabels.helm.sh/chart"),
    ({"monitors": {"picker": {"enabled": True, "job": ""}}}, "monitors.picker.job"),
    ({"monitors": {"picker": {"enabled": True, "bearerTokenSecret": {"name": "t", "key": ""}}}},
     "monitors.picker.bearerTokenSecret.key"),
    ({"monitors": {"picker": {"matchLabels": {"bad key!": "x"}}}}, "monitors.picker.matchLabels"),
]


@pytest.mark.parametrize(("bad", "key"), BAD_VALUES, ids=[k for _, k in BAD_VALUES])
def test_validate_helper_names_the_key(tmp_path: Path, helm_version: str, bad: dict, key: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    # --skip-schema-validation: the template's validate helper must catch it on its own too
    # (values.schema.json cannot express the cross-field rules).
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE, extra_args=["--skip-schema-validation"])
    assert key in str(err.value), str(err.value)


@pytest.mark.parametrize(("bad", "fragment"), [
    ({"topology": "multi-gpu"}, "topology"),
    ({"autoscaling": {"threshold": "five"}}, "threshold"),
    ({"rules": {"thresholds": {"kvCacheUsage": 1.5}}}, "kvCacheUsage"),
    ({"monitors": {"vllm": {"prot": "http"}}}, "prot"),
    ({"target": {"servedModelName": "x"}}, "servedModelName"),
    # label maps: keys and values the API server refuses in labels and selectors
    ({"prometheus": {"monitorLabels": {"release": "kube prometheus"}}}, "monitorLabels"),
    ({"monitors": {"dcgm": {"matchLabels": {"x" * 64: "y"}}}}, "matchLabels"),
    ({"dashboards": {"annotations": {"grafana folder": "LLM"}}}, "annotations"),
    # names the monitors and the ScaledObject refer to: Kubernetes names, port names
    ({"target": {"release": "vLLM"}}, "release"),
    ({"target": {"namespace": "team_a"}}, "namespace"),
    ({"target": {"name": "Server.1"}}, "name"),
    ({"monitors": {"dcgm": {"port": "9400"}}}, "port"),
    ({"monitors": {"vllm": {"port": "http metrics"}}}, "port"),
    ({"autoscaling": {"maxReplicaCount": 2**31}}, "maxReplicaCount"),  # the ScaledObject's int32
    ({"autoscaling": {"extraTriggers": [{"type": "cron"}]}}, "metadata"),  # KEDA requires it
    ({"monitors": {"picker": {"port": "9090"}}}, "port"),
    ({"monitors": {"picker": {"bearerTokenSecret": {"name": "Token_Secret"}}}}, "name"),
], ids=["topology", "threshold-type", "kv-range", "unknown-key", "removed-key", "label-value", "label-key",
        "annotation-key", "release", "namespace", "name", "port-number", "port-space", "beyond-int32", "trigger-metadata",
        "picker-port-number", "picker-secret-name"])
def test_schema_rejects_bad_values(tmp_path: Path, helm_version: str, bad: dict, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(helm.HelmError) as err:
        helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE)
    assert fragment in str(err.value), str(err.value)


@pytest.mark.parametrize("topology", ["single-node", "multi-node", "ray-serve"])
def test_names_that_look_like_numbers_stay_strings(tmp_path: Path, helm_version: str, topology: str,
                                                    crd_registry) -> None:
    """A release, namespace or target named "2" is a valid Kubernetes name; rendered unquoted it
    became the YAML number 2 and the ScaledObject and monitors were invalid."""
    path = tmp_path / "numbers.yaml"
    path.write_text(yaml.safe_dump({"topology": topology, "target": {"release": "2", "namespace": "3", "name": "4"}}))
    objects = helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    for obj in _of_kind(objects, "ScaledObject"):
        assert obj["metadata"]["namespace"] == "3" and obj["spec"]["scaleTargetRef"]["name"] == "4"
    for obj in _of_kind(objects, "ServiceMonitor") + _of_kind(objects, "PodMonitor"):
        if obj["spec"]["namespaceSelector"].get("matchNames"):
            assert obj["spec"]["namespaceSelector"]["matchNames"] == ["3"]


def test_large_counts_render_as_integers(tmp_path: Path, helm_version: str, crd_registry) -> None:
    """Helm holds numbers as float64 and prints 1000000 as 1e+06: the ScaledObject's counts went out
    as that text, which is no integer."""
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({"autoscaling": {"maxReplicaCount": 1_000_000, "pollingInterval": 2_000_000,
                                                    "cooldownPeriod": 3_000_000}}))
    objects = helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    (scaled,) = _of_kind(objects, "ScaledObject")
    assert (scaled["spec"]["maxReplicaCount"], scaled["spec"]["pollingInterval"], scaled["spec"]["cooldownPeriod"]) == (
        1_000_000, 2_000_000, 3_000_000)


def _dashboards(objects) -> list[tuple[str, str, dict]]:
    """(ConfigMap namespace/name, data key, parsed dashboard) of every dashboard ConfigMap."""
    out = []
    for cm in _of_kind(objects, "ConfigMap"):
        for key, text in (cm.get("data") or {}).items():
            if key.endswith(".json"):
                out.append((f"{cm['metadata']['namespace']}/{cm['metadata']['name']}", key, json.loads(text)))
    return out


def test_two_releases_keep_their_own_dashboards() -> None:
    """Grafana keys a dashboard by uid (and refuses two with one title in a folder), and the
    dashboard sidecar writes every ConfigMap key as a file into one folder: two observability
    releases (two models) must differ in all four, or one overwrites the other."""
    values_file = SCENARIO_FILES[0]
    releases = [("llm", "obs-a"), ("llm", "obs-b"), ("other", "obs-a")]
    seen: dict[str, list] = {"configmap": [], "key": [], "uid": [], "title": []}
    for namespace, release in releases:
        dashboards = _dashboards(helm.render(CHART, [values_file], release=release, namespace=namespace))
        assert dashboards, f"{release}: no dashboard rendered"
        for cm, key, dash in dashboards:
            assert len(dash["uid"]) <= 40, f"{dash['uid']}: Grafana uids are at most 40 characters"
            for what, value in (("configmap", cm), ("key", key), ("uid", dash["uid"]), ("title", dash["title"])):
                seen[what].append(value)
    for what, values in seen.items():
        assert len(set(values)) == len(values), f"dashboard {what} shared between releases: {values}"


# --- endpoint picker (vllm-inference routing.mode gateway) ------------------------------------

def _picker_monitors(objects) -> list[dict]:
    return [o for o in _of_kind(objects, "ServiceMonitor") if o["metadata"]["name"].endswith("-endpoint-picker")]


def test_picker_monitor_is_off_by_default(helm_version: str) -> None:
    assert ObservabilityValues().monitors.picker.enabled is False
    assert not _picker_monitors(helm.render(CHART, helm=helm_version, namespace=NAMESPACE))


@pytest.mark.parametrize("topology", ["single-node", "multi-node", "ray-serve", "disaggregated"])
def test_picker_monitor_selects_the_picker_service(tmp_path: Path, helm_version: str, topology: str,
                                                   crd_registry) -> None:
    """The picker Service of charts/vllm-inference (`<fullname>-epp`, labels instance and
    component endpoint-picker, port http-metrics 9090): scraped with the release's scrape settings,
    open /metrics (metricsAuth false, the vllm-inference default) so no credentials."""
    path = tmp_path / "picker.yaml"
    path.write_text(yaml.safe_dump({"topology": topology, "target": {"release": "chat", "namespace": "serving"},
                                    "metrics": {"interval": "20s", "scrapeTimeout": "5s"},
                                    "monitors": {"picker": {"enabled": True}}}))
    objects = helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    (monitor,) = _picker_monitors(objects)
    spec = monitor["spec"]
    assert spec["selector"] == {"matchLabels": {"app.kubernetes.io/instance": "chat",
                                                "app.kubernetes.io/component": "endpoint-picker"}}
    assert spec["namespaceSelector"] == {"matchNames": ["serving"]}
    (endpoint,) = spec["endpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["scheme"]) == ("http-metrics", "/metrics", "http")
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("20s", "5s")
    assert "authorization" not in endpoint and "bearerTokenSecret" not in endpoint
    assert endpoint["relabelings"] == [{"action": "replace", "targetLabel": "job", "replacement": "endpoint-picker"}]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_picker_monitor_sends_the_bearer_token(tmp_path: Path, helm_version: str, crd_registry) -> None:
    """metricsAuth true on the picker: Prometheus sends a ServiceAccount token from a Secret
    (authorization, not the deprecated bearerTokenSecret field); custom selector labels replace
    the default ones."""
    path = tmp_path / "picker.yaml"
    path.write_text(yaml.safe_dump({"monitors": {"picker": {
        "enabled": True, "port": "metrics", "job": "epp",
        "matchLabels": {"app.kubernetes.io/name": "epp"},
        "bearerTokenSecret": {"name": "prometheus-epp-token", "key": "bearer"}}}}))
    objects = helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE)
    validate_all(objects, crd_registry)
    (monitor,) = _picker_monitors(objects)
    assert monitor["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "epp"}}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics"
    assert endpoint["authorization"] == {"type": "Bearer",
                                         "credentials": {"name": "prometheus-epp-token", "key": "bearer"}}
    assert endpoint["relabelings"][0]["replacement"] == "epp"


def _picker_panels() -> list[dict]:
    dashboard = json.loads((CHART / "dashboards" / "vllm-serving.json").read_text())
    panels = dashboard["panels"]
    (row,) = [i for i, p in enumerate(panels) if p["type"] == "row" and p["title"] == "Endpoint picker"]
    following = panels[row + 1:]
    end = next((i for i, p in enumerate(following) if p["type"] == "row"), len(following))
    return following[:end]


def test_dashboard_has_the_endpoint_picker_row() -> None:
    """One panel per picker signal (GIE v1.5.0 pkg/epp/metrics/metrics.go): the pool gauges, the
    request counter as a rate, the scheduler latency and the prefix-index hit ratio histograms
    through their _bucket/_sum/_count series."""
    exprs = " ".join(t["expr"] for p in _picker_panels() for t in p.get("targets", []))
    for gauge in ("inference_pool_average_queue_size", "inference_pool_average_kv_cache_utilization",
                  "inference_pool_ready_pods"):
        assert gauge + "{" in exprs, gauge
    assert "rate(inference_objective_request_total{" in exprs
    assert "histogram_quantile(0.99, sum by (namespace, service, le) (rate(" \
        "inference_extension_scheduler_e2e_duration_seconds_bucket{" in exprs
    assert "inference_extension_prefix_indexer_hit_ratio_bucket{" in exprs


COST_RECORD = "namespace_job_model:vllm_cost_usd_per_million_output_tokens:rate5m"


def _cost_group(objects) -> dict | None:
    rules = _of_kind(objects, "PrometheusRule")
    groups = [g for r in rules for g in r["spec"]["groups"] if g["name"] == "vllm-eks.cost"]
    assert len(groups) <= 1
    return groups[0] if groups else None


@pytest.mark.parametrize("values_file", SCENARIO_FILES, ids=_id)
def test_cost_rules_carry_the_plans_price(values_file: Path) -> None:
    """Every scenario has a catalog price: the generator wrote the Plan's cost_per_hour_usd as the
    replica price, and the cost group multiplies the release's engine pods by it; the dashboard's
    cost panel reads the recorded series."""
    price = _values(values_file).cost.price_per_replica_hour_usd
    plan = json.loads((values_file.parent / "plan.json").read_text())
    assert price == plan["cost_per_hour_usd"] > 0
    objects = _render(values_file)
    group = _cost_group(objects)
    assert group is not None, "no vllm-eks.cost group"
    exprs = {r["record"]: r["expr"] for r in group["rules"]}
    assert COST_RECORD in exprs
    hourly = exprs["namespace_job_model:vllm_serving_cost_usd_per_hour"]
    assert f"* {price}" in hourly.replace("\n", " ") or f"* {price:g}" in hourly, hourly
    assert f'namespace="{NAMESPACE}"' in hourly and "vllm:generation_tokens_total{" in hourly
    (_, _, dashboard), *_ = _dashboards(objects)
    panels = [p for p in dashboard["panels"] if any(COST_RECORD in t.get("expr", "") for t in p.get("targets", []))]
    assert [p["title"] for p in panels] == ["Cost per million output tokens"]


def test_no_price_no_cost_rules() -> None:
    """The chart default (price 0, e.g. hardware outside the catalog without --price-per-hour):
    no cost group; the other rules render as before."""
    objects = helm.render(CHART, [CI_FILES[0]], release="vllm", namespace=NAMESPACE,
                          set_values={"cost.pricePerReplicaHourUsd": 0})
    assert _of_kind(objects, "PrometheusRule") and _cost_group(objects) is None

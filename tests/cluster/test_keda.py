"""KEDA's operator turns each ScaledObject the observability chart renders into the HPA the Plan
asks for, and with KEDA's metrics adapter behind the aggregated external metrics API, the HPA
controller scales a Deployment from a queue a real Prometheus reports.

For every committed scenario whose observability values enable autoscaling, the chart's
ScaledObject and its scale target (the vllm-inference Deployment, or the LeaderWorkerSet whose
CRD scale subresource counts groups) are created on the control plane; the API server checks the
ScaledObject against the pinned CRD. The KEDA operator (built from its module at KEDA_VERSION)
must then create an autoscaling/v2 HPA whose bounds, scale-up/scale-down policies and
stabilization windows are the Plan's (values/<scenario>/plan.json read by vllm_eks.spec.plan).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.cluster import keda, scenarios
from tests.cluster.kube import Cluster, WaitTimeout, wait_for
from tests.cluster.shapes import render_scenario_chart
from vllm_eks.spec.plan import Plan
from vllm_eks.values.observability import autoscaling_for

pytestmark = pytest.mark.cluster


def _autoscaled(s: scenarios.Scenario) -> bool:
    obs = s.values("observability")
    return bool(obs and ((yaml.safe_load(obs.read_text()) or {}).get("autoscaling") or {}).get("enabled"))


KEDA_SCENARIOS = [s for s in scenarios.discover() if _autoscaled(s)]


def scaled_object(scenario: scenarios.Scenario, ns: str) -> dict[str, Any] | None:
    objs = render_scenario_chart(scenario, "observability", ns, set_values={"target.namespace": ns})
    found = [o for o in objs if o["kind"] == "ScaledObject"]
    assert len(found) <= 1, f"{scenario.name}: {len(found)} ScaledObjects rendered"
    return found[0] if found else None


@pytest.fixture(scope="module")
def keda_operator(cluster: Cluster) -> Iterator[Cluster]:
    missing = keda.missing()
    if missing:
        pytest.fail(f"KEDA missing from {keda.crd_dir().parent}: {', '.join(missing)}; run `make cluster-tools`",
                    pytrace=False)
    cluster.ensure_namespace(keda.NAMESPACE)
    t0 = time.monotonic()
    cluster.install_crd_objects(keda.missing_crds(cluster))
    t1 = time.monotonic()
    keda.start_operator(cluster.plane)
    cluster.stats.timings.update(keda_crds_s=t1 - t0, keda_start_s=time.monotonic() - t1)
    try:
        yield cluster
    finally:
        cluster.plane.stop_component(keda.OPERATOR)


def test_pinned_keda_crds_are_the_operators() -> None:
    """The CRDs our objects are validated against ($VLLM_EKS_CRD_DIR) are the ones of the KEDA
    version the operator is built from."""
    if keda.missing():
        pytest.fail(f"KEDA CRDs missing from {keda.crd_dir()}; run `make cluster-tools`", pytrace=False)
    pinned = sorted(Path(os.environ["VLLM_EKS_CRD_DIR"]).glob("keda.sh_*.yaml"))
    assert pinned, "no keda.sh CRD pinned"
    version = (keda.crd_dir() / "VERSION").read_text().strip()
    for f in pinned:
        ours = keda.crd_dir() / f.name
        assert ours.is_file(), f"{f.name} is pinned but KEDA {version} has no such CRD file"
        assert yaml.safe_load(f.read_text())["spec"] == yaml.safe_load(ours.read_text())["spec"], \
            f"{f.name}: the pinned CRD differs from KEDA {version}'s"


def test_keda_scenarios_cover_both_targets() -> None:
    kinds = set()
    for s in KEDA_SCENARIOS:
        so = scaled_object(s, "probe")
        assert so, f"{s.name}: autoscaling enabled but no ScaledObject rendered"
        kinds.add(so["spec"]["scaleTargetRef"]["kind"])
    assert {"Deployment", "LeaderWorkerSet"} <= kinds, f"scale targets of the committed scenarios: {kinds}"


def referenced_secrets(workload: dict[str, Any]) -> dict[str, set[str]]:
    """Secret name -> keys the workload's containers read (env secretKeyRef, envFrom secretRef),
    optional references left out. KEDA resolves the target's environment when it builds the
    scalers, and refuses to create the HPA while such a Secret is missing."""
    spec = workload["spec"]
    templates = ([spec["template"]] if "template" in spec else
                 [t for t in (spec["leaderWorkerTemplate"].get("leaderTemplate"),
                              spec["leaderWorkerTemplate"].get("workerTemplate")) if t])
    out: dict[str, set[str]] = {}
    for t in templates:
        for c in t["spec"].get("containers", []) + t["spec"].get("initContainers", []):
            for e in c.get("env") or []:
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref and not ref.get("optional"):
                    out.setdefault(ref["name"], set()).add(ref["key"])
            for e in c.get("envFrom") or []:
                ref = e.get("secretRef")
                if ref and not ref.get("optional"):
                    out.setdefault(ref["name"], set())
    return out


def create_referenced_secrets(cluster: Cluster, ns: str, workload: dict[str, Any]) -> None:
    """The Secrets the chart documents as prerequisites (e.g. the Hugging Face token), made with
    placeholder values as the user would make them before installing."""
    for secret, keys in referenced_secrets(workload).items():
        cluster.core.create_namespaced_secret(ns, client.V1Secret(
            metadata=client.V1ObjectMeta(name=secret), string_data={k: "placeholder" for k in keys}))


def expected_hpa(plan: Plan) -> dict[str, Any]:
    """The HPA fields the Plan determines: bounds from its pool section, the policies the
    generator derives from it (autoscaling_for)."""
    a = autoscaling_for(plan)
    up, down = a.behavior.scale_up, a.behavior.scale_down
    assert up.period_seconds == plan.pool.scale_up_period_seconds
    return {
        "min_replicas": plan.pool.autoscaling_min_replicas,
        "max_replicas": plan.pool.autoscaling_max_replicas,
        "scale_up": {"stabilization_window_seconds": up.stabilization_window_seconds, "select_policy": "Max",
                     "policies": [{"type": "Pods", "value": up.replicas, "period_seconds": up.period_seconds}]},
        "scale_down": {"stabilization_window_seconds": down.stabilization_window_seconds, "select_policy": "Min",
                       "policies": [{"type": "Pods", "value": down.replicas, "period_seconds": down.period_seconds}]},
        "target_average_value": str(a.threshold),
    }


def observed_hpa(hpa: client.V2HorizontalPodAutoscaler) -> dict[str, Any]:
    b = hpa.spec.behavior

    def rules(r: client.V2HPAScalingRules) -> dict[str, Any]:
        return {"stabilization_window_seconds": r.stabilization_window_seconds, "select_policy": r.select_policy,
                "policies": [{"type": p.type, "value": p.value, "period_seconds": p.period_seconds}
                             for p in r.policies or []]}

    (metric,) = hpa.spec.metrics
    assert metric.type == "External" and metric.external.target.type == "AverageValue", metric
    return {"min_replicas": hpa.spec.min_replicas, "max_replicas": hpa.spec.max_replicas,
            "scale_up": rules(b.scale_up), "scale_down": rules(b.scale_down),
            "target_average_value": metric.external.target.average_value}


@pytest.mark.parametrize("scenario", KEDA_SCENARIOS, ids=[s.name for s in KEDA_SCENARIOS])
def test_scaled_object_becomes_the_plans_hpa(keda_operator: Cluster, scenario: scenarios.Scenario) -> None:
    cluster = keda_operator
    assert scenario.plan, f"{scenario.name}: no plan.json"
    plan = Plan.from_summary(scenario.plan)
    ns = ("keda-" + scenario.name.replace(".", "-"))[:63].rstrip("-")
    so = scaled_object(scenario, ns)
    assert so, f"{scenario.name}: autoscaling enabled but the observability chart renders no ScaledObject"
    ref = so["spec"]["scaleTargetRef"]
    targets = [o for o in render_scenario_chart(scenario, "vllm-inference", ns)
               if (o["apiVersion"], o["kind"], o["metadata"]["name"]) == (ref["apiVersion"], ref["kind"], ref["name"])]
    assert targets, f"{scenario.name}: the ScaledObject targets {ref}, which vllm-inference does not render"
    cluster.ensure_namespace(ns)
    try:
        create_referenced_secrets(cluster, ns, targets[0])
        cluster.create(targets[0], ns)
        cluster.create(so, ns)
        name = so["metadata"]["name"]

        def hpa() -> client.V2HorizontalPodAutoscaler | None:
            keda.check_running(cluster.plane)
            stored = cluster.get(so["apiVersion"], "ScaledObject", name, ns)
            hpa_name = ((stored.to_dict().get("status") or {}).get("hpaName")) if stored else None
            if not hpa_name:
                return None
            try:
                return client.AutoscalingV2Api(cluster.api).read_namespaced_horizontal_pod_autoscaler(hpa_name, ns)
            except client.ApiException:
                return None

        try:
            got = wait_for(f"KEDA to create the HPA of ScaledObject {ns}/{name}", hpa, timeout=60)
        except WaitTimeout as exc:
            stored = cluster.get(so["apiVersion"], "ScaledObject", name, ns)
            status = (stored.to_dict().get("status") if stored else None)
            tail = "\n".join(line[:400] for line in cluster.plane.log_tail(keda.OPERATOR, 15).splitlines())
            raise AssertionError(f"{exc}\nScaledObject status: {status}\nkeda-operator log (last lines):\n{tail}") from None
        assert (got.spec.scale_target_ref.kind, got.spec.scale_target_ref.name) == (ref["kind"], ref["name"])
        assert got.spec.scale_target_ref.api_version == ref["apiVersion"]
        assert observed_hpa(got) == expected_hpa(plan), f"{scenario.name}: the HPA KEDA made is not the Plan's"
        cluster.stats.objects_accepted += 2
        cluster.stats.keda_hpas += 1
    finally:
        # KEDA's finalizer on the ScaledObject needs the operator: delete while it runs.
        cluster.delete_namespace(ns, wait=True)


# --- the whole loop: Prometheus -> KEDA operator -> adapter -> HPA controller -> Deployment ----

class QueueExporter:
    """A /metrics endpoint serving vLLM's queue gauge with the value the test sets."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.value = 0.0
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                body = ("# TYPE vllm:num_requests_waiting gauge\n"
                        f'vllm:num_requests_waiting{{model_name="m"}} {exporter.value}\n').encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def keda_adapter(keda_operator: Cluster) -> Iterator[Cluster]:
    missing = keda.missing((keda.ADAPTER,))
    if missing:
        pytest.fail(f"{keda.ADAPTER} missing from {keda.crd_dir().parent / 'bin'}; run `make cluster-tools`",
                    pytrace=False)
    t0 = time.monotonic()
    keda.start_adapter(keda_operator, keda_operator.plane.ports["keda_grpc"])
    keda_operator.stats.timings["keda_adapter_s"] = time.monotonic() - t0
    try:
        yield keda_operator
    finally:
        keda.stop_adapter(keda_operator)


def test_queue_in_prometheus_scales_the_deployment(keda_adapter: Cluster, tmp_path: Path) -> None:
    """The queue grows to two replicas' worth above the Plan's minimum: the HPA controller reads
    KEDA's external metric through the aggregated API and adds the two replicas the scale-up
    policy allows in one period."""
    from tests.engine.prom import PrometheusServer, ScrapeTarget

    cluster = keda_adapter
    targets = [s for s in KEDA_SCENARIOS
               if (scaled_object(s, "probe") or {}).get("spec", {}).get("scaleTargetRef", {}).get("kind") == "Deployment"]
    assert targets, "no committed autoscaled scenario targets a Deployment"
    # The fewest replicas: the Deployment starts at the Plan's minimum.
    scenario = min(targets, key=lambda s: Plan.from_summary(s.plan).pool.autoscaling_min_replicas)
    plan = Plan.from_summary(scenario.plan)
    floor = plan.pool.autoscaling_min_replicas
    ns = "keda-hpa-loop"
    job = (yaml.safe_load(scenario.values("observability").read_text())["metrics"])["job"]
    exporter = QueueExporter()
    prom = PrometheusServer(tmp_path / "prom", [ScrapeTarget(exporter.address, {"job": job, "namespace": ns})], [])
    prom.start()
    try:
        objs = render_scenario_chart(scenario, "observability", ns, set_values={
            "target.namespace": ns, "prometheus.serverAddress": prom.url, "autoscaling.pollingInterval": 5,
            # The Plan's 60 s scale-up window would only make the test wait; the policy stays.
            "autoscaling.behavior.scaleUp.stabilizationWindowSeconds": 0})
        (so,) = [o for o in objs if o["kind"] == "ScaledObject"]
        trigger = so["spec"]["triggers"][0]["metadata"]
        threshold = int(trigger["threshold"])
        step = autoscaling_for(plan).behavior.scale_up.replicas
        want = min(floor + step, plan.pool.autoscaling_max_replicas)
        queue = threshold * want
        deployment = next(o for o in render_scenario_chart(scenario, "vllm-inference", ns, set_values={"replicas": floor})
                          if o["kind"] == "Deployment")
        cluster.ensure_namespace(ns)
        create_referenced_secrets(cluster, ns, deployment)
        exporter.value = queue
        wait_for(f"Prometheus to answer {trigger['query']} with {queue}",
                 lambda: [r for r in prom.query(trigger["query"]) if float(r["value"][1]) == queue], timeout=30)
        cluster.create(deployment, ns)
        cluster.create(so, ns)
        name = deployment["metadata"]["name"]

        def scaled() -> int | None:
            keda.check_running(cluster.plane)
            n = cluster.apps.read_namespaced_deployment(name, ns).spec.replicas
            return n if n == want else None

        try:
            wait_for(f"the HPA controller to scale {name} to {want}", scaled, timeout=150, interval=2)
        except WaitTimeout as exc:
            hpas = client.AutoscalingV2Api(cluster.api).list_namespaced_horizontal_pod_autoscaler(ns).items
            conds = [(c.type, c.status, c.reason, c.message) for h in hpas for c in (h.status.conditions or [])]
            tail = "\n".join(line[:400] for line in cluster.plane.log_tail(keda.ADAPTER, 10).splitlines())
            raise AssertionError(f"{exc}\nHPA conditions: {conds}\nkeda-adapter log:\n{tail}") from None
        (hpa,) = client.AutoscalingV2Api(cluster.api).list_namespaced_horizontal_pod_autoscaler(ns).items
        assert (hpa.spec.min_replicas, hpa.spec.max_replicas) == (floor, plan.pool.autoscaling_max_replicas)
        events = cluster.core.list_namespaced_event(ns, field_selector=f"involvedObject.name={hpa.metadata.name}").items
        assert any(e.reason == "SuccessfulRescale" and f"New size: {want}" in e.message for e in events), \
            [(e.reason, e.message) for e in events]
        cluster.stats.keda_rescales += 1
    finally:
        prom.stop()
        exporter.stop()
        cluster.delete_namespace(ns, wait=True)

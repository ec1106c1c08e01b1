"""charts/vllm-inference's NetworkPolicy admits every port charts/observability scrapes on the
model-server pods, from the monitoring namespace, for every topology.

For each committed values/<scenario>/ and each pairing of the two charts' ci/ files (one per
topology, plus the hardened single-node file), both charts are rendered for one release with
`networkPolicy.enabled` and the monitoring namespace in `networkPolicy.allowedNamespaces`. Every
endpoint of every ServiceMonitor/PodMonitor that selects a model-server object is resolved as
Prometheus Operator resolves it: a ServiceMonitor's named Service port to its targetPort and then
to the container port of each pod behind the Service; a PodMonitor's named port to the container
port of each selected pod (with the labels LWS and KubeRay add). The policy must admit each of
those (pod, port number) from a Prometheus pod in the monitoring namespace
(tests/harness/pods.py evaluates NetworkPolicy semantics)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES
from tests.harness.pods import CreatedPod, created_pods, ingress_admits, selector_matches

pytestmark = pytest.mark.render

VLLM_CI = CHARTS / "vllm-inference" / "ci"
OBS_CI = CHARTS / "observability" / "ci"
# Where Prometheus runs (kube-prometheus-stack's usual namespace, the one charts/observability's
# default prometheus.serverAddress names); the monitors are rendered there too.
MONITORING = "monitoring"
PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus"}

SCENARIOS = sorted(p.parent for p in VALUES.glob("*/observability.yaml")
                   if (p.parent / "vllm-inference.yaml").is_file())
# (vllm-inference ci file, observability ci file of the same topology)
CI_PAIRS = [
    (VLLM_CI / "01-defaults-values.yaml", OBS_CI / "01-single-node-values.yaml"),
    (VLLM_CI / "03-hardened-values.yaml", OBS_CI / "01-single-node-values.yaml"),
    (VLLM_CI / "07-multi-node-lws-values.yaml", OBS_CI / "02-multi-node-values.yaml"),
    (VLLM_CI / "08-ray-serve-values.yaml", OBS_CI / "03-ray-serve-values.yaml"),
    (VLLM_CI / "09-disaggregated-values.yaml", OBS_CI / "06-disaggregated-values.yaml"),
]
CASES = [pytest.param(s / "vllm-inference.yaml", s / "observability.yaml", id=s.name) for s in SCENARIOS] + [
    pytest.param(v, o, id=f"ci-{v.name.split('-')[0]}+{o.name.split('-')[0]}") for v, o in CI_PAIRS]


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


@functools.lru_cache(maxsize=None)
def _rendered(vllm_values: Path, obs_values: Path) -> tuple[list[dict], list[dict]]:
    obs = _load(obs_values)
    release = obs.get("target", {}).get("release") or "vllm"
    namespace = obs.get("target", {}).get("namespace") or "llm"
    allowed = (_load(vllm_values).get("networkPolicy") or {}).get("allowedNamespaces") or []
    served = helm.render(CHARTS / "vllm-inference", [vllm_values], release=release, namespace=namespace,
                         set_values={"networkPolicy.enabled": True,
                                     "networkPolicy.allowedNamespaces": sorted({*allowed, MONITORING})})
    # The monitors look for the model server in its own namespace, whatever the file says.
    monitors = helm.render(CHARTS / "observability", [obs_values], release=f"{release}-observability",
                           namespace=MONITORING, set_values={"target.release": release, "target.namespace": namespace})
    return served, monitors


def _in_namespaces(selector: dict[str, Any], namespace: str, own: str) -> bool:
    if selector.get("any"):
        return True
    names = selector.get("matchNames")
    return namespace in names if names else namespace == own


def scraped_ports(served: list[dict], monitors: list[dict]) -> list[tuple[str, CreatedPod, int]]:
    """(monitor endpoint, model-server pod, container port number) for every endpoint of every
    monitor that selects a model-server object of `served`."""
    pods = created_pods(served)
    out: list[tuple[str, CreatedPod, int]] = []
    for monitor in (m for m in monitors if m["kind"] in {"ServiceMonitor", "PodMonitor"}):
        spec, own = monitor["spec"], monitor["metadata"]["namespace"]
        name = f"{monitor['kind']}/{monitor['metadata']['name']}"
        if monitor["kind"] == "ServiceMonitor":
            services = [s for s in served if s["kind"] == "Service"
                        and selector_matches(spec["selector"], s["metadata"].get("labels", {}))
                        and _in_namespaces(spec.get("namespaceSelector", {}), s["metadata"]["namespace"], own)]
            for service, endpoint in ((s, e) for s in services for e in spec["endpoints"]):
                (port,) = [p for p in service["spec"]["ports"] if p.get("name") == endpoint["port"]]
                target = port.get("targetPort", port["port"])
                backing = [p for p in pods if p.namespace == service["metadata"]["namespace"]
                           and selector_matches({"matchLabels": service["spec"]["selector"]}, p.labels)]
                assert backing, f"{name}: Service {service['metadata']['name']} selects no pod"
                for pod in backing:
                    number = pod.port_number(target) if isinstance(target, str) else int(target)
                    assert number is not None, f"{name}: {pod.what} declares no container port {target}"
                    out.append((f"{name} port {endpoint['port']}", pod, number))
        else:
            selected = [p for p in pods if selector_matches(spec["selector"], p.labels)
                        and _in_namespaces(spec.get("namespaceSelector", {}), p.namespace, own)]
            for pod, endpoint in ((p, e) for p in selected for e in spec["podMetricsEndpoints"]):
                assert "port" in endpoint, f"{name}: endpoint without a port name: {endpoint}"
                number = pod.port_number(endpoint["port"])
                assert number is not None, f"{name}: {pod.what} declares no container port {endpoint['port']}"
                out.append((f"{name} port {endpoint['port']}", pod, number))
    return out


@pytest.mark.parametrize(("vllm_values", "obs_values"), CASES)
def test_policy_admits_every_scraped_port_from_the_monitoring_namespace(vllm_values: Path, obs_values: Path) -> None:
    served, monitors = _rendered(vllm_values, obs_values)
    policies = [o for o in served if o["kind"] == "NetworkPolicy"]
    assert len(policies) == 1, "networkPolicy.enabled renders one NetworkPolicy"
    scraped = scraped_ports(served, monitors)
    assert scraped, "no monitor of charts/observability selects a model-server pod"
    refused = sorted({f"{what} -> {pod.what}:{number}" for what, pod, number in scraped
                      if not ingress_admits(policies, pod, number, MONITORING, PROMETHEUS_POD_LABELS)})
    assert not refused, f"NetworkPolicy refuses scrapes from namespace {MONITORING}: {refused}"


def test_cases_cover_every_topology() -> None:
    topologies = {(_load(v).get("topology") or "single-node") for v in (p.values[0] for p in CASES)}
    assert topologies == {"single-node", "multi-node", "ray-serve", "disaggregated"}, topologies


def test_evaluator_refuses_what_the_policy_does_not_list() -> None:
    """The check can fail: a port the policy does not list, and a namespace it does not admit."""
    served, _ = _rendered(*CI_PAIRS[3])
    policies = [o for o in served if o["kind"] == "NetworkPolicy"]
    head = next(p for p in created_pods(served) if p.what.endswith(" head"))
    assert not ingress_admits(policies, head, 9999, MONITORING, PROMETHEUS_POD_LABELS)
    assert not ingress_admits(policies, head, 8000, "elsewhere", PROMETHEUS_POD_LABELS)
    assert ingress_admits(policies, head, 8000, MONITORING, PROMETHEUS_POD_LABELS)

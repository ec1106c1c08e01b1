"""Cross-chart consistency for every committed values/<scenario>/: each monitor and ScaledObject
of charts/observability selects objects the rendered vllm-inference (and gpu-infra) output
actually contains — names, namespaces, labels and port names — as Prometheus Operator and KEDA
would resolve them."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES
from tests.harness.pods import CreatedPod, created_pods
from tests.harness.pods import selects as _selects
from vllm_eks.values.observability import vllm_inference_fullname

pytestmark = pytest.mark.render

SCENARIOS = sorted(p.parent for p in VALUES.glob("*/observability.yaml")
                   if (p.parent / "vllm-inference.yaml").is_file())
GPU_INFRA_RELEASE = "gpu-infra"
GPU_INFRA_NAMESPACE = "gpu-infra"


def _id(path: Path) -> str:
    return path.name


def _obs_values(scenario: Path) -> dict[str, Any]:
    return yaml.safe_load((scenario / "observability.yaml").read_text())


def _namespace(scenario: Path) -> str:
    return _obs_values(scenario)["target"].get("namespace") or "llm"


@functools.lru_cache(maxsize=None)
def _rendered(scenario: Path) -> dict[str, list[dict]]:
    values = _obs_values(scenario)
    namespace = _namespace(scenario)
    release = values["target"]["release"]
    out = {
        "observability": helm.render(CHARTS / "observability", [scenario / "observability.yaml"],
                                     release=f"{release}-observability", namespace=namespace),
        "vllm-inference": helm.render(CHARTS / "vllm-inference", [scenario / "vllm-inference.yaml"],
                                      release=release, namespace=namespace),
    }
    if (scenario / "gpu-infra.yaml").is_file():
        out["gpu-infra"] = helm.render(CHARTS / "gpu-infra", [scenario / "gpu-infra.yaml"],
                                       release=GPU_INFRA_RELEASE, namespace=GPU_INFRA_NAMESPACE)
    return out


def _in_namespaces(selector: dict, namespace: str, own: str) -> bool:
    if selector.get("any"):
        return True
    names = selector.get("matchNames")
    return namespace in names if names else namespace == own


def _ns(obj: dict) -> str:
    return obj["metadata"].get("namespace", "")


def _container_port_names(pod: CreatedPod) -> set[str]:
    return {p["name"] for p in pod.container_ports() if p.get("name")}


def test_scenarios_exist() -> None:
    assert SCENARIOS, "no values/<scenario>/ with observability.yaml and vllm-inference.yaml: run `make values`"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_target_name_matches_the_vllm_inference_fullname(scenario: Path) -> None:
    values = _obs_values(scenario)
    workloads = [o for o in _rendered(scenario)["vllm-inference"]
                 if o["kind"] in {"Deployment", "LeaderWorkerSet", "RayService"}]
    assert workloads, "vllm-inference rendered no workload"
    names = {o["metadata"]["name"] for o in workloads}
    assert vllm_inference_fullname(values["target"]["release"]) in names, names
    assert values["target"]["name"] in names, names


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_model_server_monitor_selects_serving_endpoints(scenario: Path) -> None:
    rendered = _rendered(scenario)
    obs, served = rendered["observability"], rendered["vllm-inference"]
    topology = _obs_values(scenario)["topology"]
    monitors = [o for o in obs if o["kind"] in {"ServiceMonitor", "PodMonitor"}
                and not o["metadata"]["name"].endswith(("-dcgm-exporter", "-endpoint-picker"))]
    assert len(monitors) == 1, [o["metadata"]["name"] for o in monitors]
    monitor = monitors[0]
    spec = monitor["spec"]
    match = spec["selector"]["matchLabels"]
    own_ns = _ns(monitor)
    if monitor["kind"] == "ServiceMonitor":
        assert topology == "single-node"
        services = [s for s in served if s["kind"] == "Service" and _selects(match, s["metadata"].get("labels", {}))
                    and _in_namespaces(spec["namespaceSelector"], _ns(s), own_ns)]
        assert services, f"ServiceMonitor selects no Service with {match}"
        pods = created_pods(served)
        for service in services:
            ports = {p.get("name"): p for p in service["spec"]["ports"]}
            for endpoint in spec["endpoints"]:
                assert endpoint["port"] in ports, f"Service {service['metadata']['name']} has no port {endpoint['port']}"
                target_port = ports[endpoint["port"]].get("targetPort")
                backing = [pod for pod in pods if _selects(service["spec"]["selector"], pod.labels)]
                assert backing, f"Service {service['metadata']['name']} selects no pod template"
                if isinstance(target_port, str):
                    for pod in backing:
                        assert target_port in _container_port_names(pod), f"{pod.what}: no container port {target_port}"
    else:
        assert topology in {"multi-node", "ray-serve", "disaggregated"}
        pods = [pod for pod in created_pods(served) if _selects(match, pod.labels)]
        assert pods, f"PodMonitor selects no pod template with {match}"
        if topology == "multi-node":
            assert all(pod.what.endswith("leader") for pod in pods), [pod.what for pod in pods]
        for endpoint in spec["podMetricsEndpoints"]:
            for pod in pods:
                assert endpoint["port"] in _container_port_names(pod), f"{pod.what}: no container port {endpoint['port']}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_scaled_object_targets_a_rendered_workload(scenario: Path) -> None:
    rendered = _rendered(scenario)
    scaled = [o for o in rendered["observability"] if o["kind"] == "ScaledObject"]
    topology = _obs_values(scenario)["topology"]
    if topology in {"ray-serve", "disaggregated"}:
        assert not scaled
        return
    assert len(scaled) == 1, "every Deployment/LeaderWorkerSet scenario autoscales on the queue"
    ref = scaled[0]["spec"]["scaleTargetRef"]
    targets = [o for o in rendered["vllm-inference"]
               if (o["apiVersion"], o["kind"], o["metadata"]["name"]) == (ref["apiVersion"], ref["kind"], ref["name"])
               and _ns(o) == _ns(scaled[0])]
    assert targets, f"ScaledObject targets {ref} in {_ns(scaled[0])}, which vllm-inference does not render"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_restart_alert_watches_exactly_the_serving_containers(scenario: Path) -> None:
    """The restart alert's container matcher names the containers vllm-inference serves from, and
    none of the others it renders (picker, Jobs, helm tests)."""
    rendered = _rendered(scenario)
    (rule,) = [o for o in rendered["observability"] if o["kind"] == "PrometheusRule"]
    expr = next(r["expr"] for g in rule["spec"]["groups"] for r in g["rules"] if r.get("alert") == "VllmPodRestartLoop")
    matcher = re.compile(re.search(r'container=~"([^"]+)"', expr).group(1))
    serving, other = set(), set()
    for pod in created_pods(rendered["vllm-inference"]):
        names = {c["name"] for c in pod.spec.get("containers", [])}
        (serving if pod.labels.get("app.kubernetes.io/component") == "server" else other).update(names)
    assert serving and all(matcher.fullmatch(n) for n in serving), (matcher.pattern, serving)
    assert not [n for n in other if matcher.fullmatch(n)], (matcher.pattern, other)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_dcgm_monitor_selects_the_gpu_infra_exporter(scenario: Path) -> None:
    rendered = _rendered(scenario)
    monitors = [o for o in rendered["observability"]
                if o["kind"] == "ServiceMonitor" and o["metadata"]["name"].endswith("-dcgm-exporter")]
    if not monitors:
        assert _obs_values(scenario)["monitors"]["dcgm"]["enabled"] is False
        return
    assert "gpu-infra" in rendered, "DCGM monitor rendered but the scenario has no gpu-infra values"
    spec = monitors[0]["spec"]
    services = [s for s in rendered["gpu-infra"] if s["kind"] == "Service"
                and _selects(spec["selector"]["matchLabels"], s["metadata"].get("labels", {}))
                and _in_namespaces(spec["namespaceSelector"], _ns(s), _ns(monitors[0]))]
    assert len(services) == 1, f"DCGM ServiceMonitor selects {len(services)} gpu-infra Services"
    ports = {p.get("name") for p in services[0]["spec"]["ports"]}
    assert spec["endpoints"][0]["port"] in ports, ports


def _picker_service_problems(obs: list[dict], served: list[dict]) -> list[str]:
    """The picker ServiceMonitor of charts/observability against the rendered vllm-inference
    objects: it selects exactly the picker Service, in its namespace, which has the port it scrapes."""
    monitors = [o for o in obs if o["kind"] == "ServiceMonitor" and o["metadata"]["name"].endswith("-endpoint-picker")]
    if len(monitors) != 1:
        return [f"{len(monitors)} endpoint-picker ServiceMonitors rendered"]
    spec = monitors[0]["spec"]
    services = [s for s in served if s["kind"] == "Service"
                and _selects(spec["selector"]["matchLabels"], s["metadata"].get("labels", {}))
                and _in_namespaces(spec["namespaceSelector"], _ns(s), _ns(monitors[0]))]
    if [s["metadata"]["name"] for s in services] != [s["metadata"]["name"] for s in served
                                                     if s["kind"] == "Service" and s["metadata"]["name"].endswith("-epp")]:
        return [f"picker ServiceMonitor selects {[s['metadata']['name'] for s in services]}, not the -epp Service"]
    ports = {p.get("name") for p in services[0]["spec"]["ports"]}
    return [] if spec["endpoints"][0]["port"] in ports else [f"Service has no port {spec['endpoints'][0]['port']}: {ports}"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_picker_monitor_selects_the_picker_service(scenario: Path) -> None:
    """Scenarios written with `--routing gateway` enable monitors.picker; others render none."""
    rendered = _rendered(scenario)
    enabled = _obs_values(scenario).get("monitors", {}).get("picker", {}).get("enabled", False)
    if not enabled:
        assert not [o for o in rendered["observability"] if o["metadata"]["name"].endswith("-endpoint-picker")]
        return
    assert not _picker_service_problems(rendered["observability"], rendered["vllm-inference"])


def test_picker_monitor_selects_a_gateway_routed_release(tmp_path: Path) -> None:
    """A single-node scenario switched to routing.mode gateway in vllm-inference and to
    monitors.picker in observability: the ServiceMonitor finds the picker Service of its release
    and not that of another release in the same namespace."""
    scenario = next(s for s in SCENARIOS if _obs_values(s)["topology"] == "single-node")
    namespace, release = _namespace(scenario), _obs_values(scenario)["target"]["release"]
    gateway = tmp_path / "gateway.yaml"
    gateway.write_text(yaml.safe_dump({"routing": {"mode": "gateway",
                                                   "gateway": {"parentRefs": [{"name": "inference-gateway"}]}}}))
    picker = tmp_path / "picker.yaml"
    picker.write_text(yaml.safe_dump({"monitors": {"picker": {"enabled": True}}}))
    served = helm.render(CHARTS / "vllm-inference", [scenario / "vllm-inference.yaml", gateway],
                         release=release, namespace=namespace)
    obs = helm.render(CHARTS / "observability", [scenario / "observability.yaml", picker],
                      release=f"{release}-observability", namespace=namespace)
    assert not _picker_service_problems(obs, served)
    other = helm.render(CHARTS / "vllm-inference", [scenario / "vllm-inference.yaml", gateway],
                        release=f"{release}-other", namespace=namespace)
    assert _picker_service_problems(obs, other)


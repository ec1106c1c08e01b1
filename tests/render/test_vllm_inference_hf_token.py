"""The Hugging Face token Secret is optional by default, so a public model installs without it;
model.huggingface.tokenSecret.optional false makes a missing Secret stop the pod."""

from __future__ import annotations

import pytest

from tests.harness import helm
from tests.harness.chart_contract import server_container
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
SCENARIO = VALUES / "qwen2.5-7b-g6-xlarge" / "vllm-inference.yaml"


def _pod(objects: list[dict]) -> dict:
    return next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]


def test_generated_values_reference_the_secret_optionally() -> None:
    objects = helm.render(CHART, [SCENARIO], namespace="llm")
    env = {e["name"]: e for e in server_container(objects)["env"]}
    ref = env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "hf-token", "key": "HF_TOKEN", "optional": True}


def test_file_mount_is_optional_too() -> None:
    objects = helm.render(CHART, [SCENARIO], {"model.huggingface.tokenSecret.mountAs": "file"}, namespace="llm")
    volume = next(v for v in _pod(objects)["volumes"] if v["name"] == "hf-token")
    assert volume["secret"]["secretName"] == "hf-token" and volume["secret"]["optional"] is True


@pytest.mark.parametrize("mount_as", ["env", "file"])
def test_gated_models_can_require_the_secret(mount_as: str) -> None:
    objects = helm.render(CHART, [SCENARIO], {"model.huggingface.tokenSecret.optional": False,
                                              "model.huggingface.tokenSecret.mountAs": mount_as}, namespace="llm")
    if mount_as == "env":
        env = {e["name"]: e for e in server_container(objects)["env"]}
        assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["optional"] is False
    else:
        volume = next(v for v in _pod(objects)["volumes"] if v["name"] == "hf-token")
        assert volume["secret"]["optional"] is False

"""The kind profile must stay a valid vllm-inference values file: rendered here (no cluster
needed) with both Helm versions, so a chart change that breaks the kind job shows up in `make test`."""

from __future__ import annotations

import pytest

from tests.harness import chart_contract
from tests.harness.helm import render
from tests.harness.paths import CHARTS
from tests.kind.test_e2e import POOL, PROFILE
from vllm_eks.core import contract

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"


def test_kind_profile_renders(helm_version: str) -> None:
    objs = render(CHART, [PROFILE], helm=helm_version, release="vllm", namespace="vllm-e2e")
    (dep,) = [o for o in objs if o["kind"] == "Deployment"]
    spec = dep["spec"]["template"]["spec"]
    assert spec["nodeSelector"][chart_contract.rendered().pool_label] == POOL
    (c,) = [c for c in spec["containers"] if c["name"] == "vllm"]
    assert c["image"].startswith("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:")
    assert str(c["resources"]["limits"][contract.GPU_RESOURCE]) == "1"

"""A model read from the Hugging Face Hub is served at the commit that was sized: Plans made by
the real planner against the local Hub stand-in (tests/harness/fake_hub.py), rendered by Helm 3
and Helm 4 - the Deployment's `vllm serve` arguments carry `--revision <sha>` and RayService's
Ray Serve LLM app the same `revision` in engine_kwargs."""

from __future__ import annotations

import pytest
import yaml

from tests.harness import helm
from tests.harness.fake_hub import serve
from tests.render.test_vllm_inference_plan_consistency import CHART, assert_matches_plan
from tests.render.test_vllm_inference_rayserve import rayservice, serve_app
from tests.unit.hub_checkpoints import fake_repo
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values

pytestmark = pytest.mark.render

REPO = "Qwen/Qwen2.5-7B-Instruct-AWQ"


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory):
    fake = fake_repo(REPO)
    server, endpoint = serve(fake)
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("hf")
    for k, v in {"HF_ENDPOINT": endpoint, "HF_HOME": str(home), "VLLM_EKS_HUB_CACHE": str(home / "c")}.items():
        mp.setenv(k, v)
    mp.delenv("HF_HUB_OFFLINE", raising=False)
    try:
        out = {}
        for topology in ("auto", "ray-serve"):
            plan = make_plan(PlanRequest(model=REPO, instance="g6e.xlarge", topology=topology))
            path = home / f"{topology}.yaml"
            path.write_text(yaml.safe_dump(values_document(build_values(plan, ValuesOptions())), sort_keys=False))
            out[topology] = (plan, path)
        yield fake.sha, out
    finally:
        mp.undo()
        server.shutdown()


def test_deployment_serves_the_sized_commit(plans, helm_version: str) -> None:
    sha, out = plans
    plan, values = out["auto"]
    objects = helm.render(CHART, [values], helm=helm_version, namespace="llm")
    assert_matches_plan(objects, plan)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[0] == REPO and args[args.index("--revision") + 1] == sha


def test_rayservice_serves_the_sized_commit(plans, helm_version: str) -> None:
    sha, out = plans
    plan, values = out["ray-serve"]
    objects = helm.render(CHART, [values], helm=helm_version, namespace="llm")
    (llm,) = serve_app(rayservice(objects))["args"]["llm_configs"]
    assert llm["model_loading_config"]["model_source"] == REPO and llm["engine_kwargs"]["revision"] == sha

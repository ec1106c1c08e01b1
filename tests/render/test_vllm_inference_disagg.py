"""charts/vllm-inference topology disaggregated (the Ray LLM prefill/decode guide): a RayService with Ray Serve LLM's
prefill/decode app, one worker group per pool sized by the Plan, NIXL KV transfer with the
LIBFABRIC backend, EFA on every GPU pod, the pools in one zone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES
from tests.render.test_vllm_inference_rayserve import assert_head_runs_no_model, head_and_groups, rayservice, serve_app
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.core import contract
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.spec.plan import Plan
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values

# The committed scenarios use the default release and namespace.
DEFAULTS = ValuesOptions()

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
CI = CHART / "ci" / "09-disaggregated-values.yaml"
NAMESPACE = "llm"


def assert_disaggregated_matches_plan(objects: list[dict[str, Any]], plan: Plan,
                                      gpu_infra: dict[str, Any] | None = None) -> None:
    assert plan.topology == "disaggregated" and plan.prefill and plan.decode
    rs = rayservice(objects)
    head, groups = head_and_groups(rs)
    assert_head_runs_no_model(head)
    app = serve_app(rs)
    assert app["import_path"] == "ray.serve.llm:build_pd_openai_app"
    by_name = {g["groupName"]: g for g in groups}
    assert set(by_name) == {"prefill", "decode"}
    efa_max = instance_catalog()[plan.instance].efa_max
    zones = set()
    for pool in (plan.prefill, plan.decode):
        group = by_name[pool.role]
        assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == pool.replicas
        spec = group["template"]["spec"]
        (c,) = spec["containers"]
        assert c["resources"]["limits"][contract.GPU_RESOURCE] == plan.layout.gpus_per_pod
        assert c["resources"]["limits"][contract.EFA_RESOURCE] == plan.pod.efa_devices_per_pod == efa_max
        zones.add(spec["nodeSelector"][contract.ZONE_LABEL])
        cfg = app["args"][f"{pool.role}_config"]
        assert cfg["deployment_config"]["num_replicas"] == pool.replicas
        kwargs = cfg["engine_kwargs"]
        for key, value in pool.settings.items():
            assert kwargs[key] == value, f"{pool.role}: {key}"
        assert kwargs["kv_transfer_config"] == plan.kv_transfer_config
        assert kwargs["kv_transfer_config"]["kv_connector_extra_config"]["backends"] == ["LIBFABRIC"]
        assert kwargs["max_num_seqs"] == pool.max_num_seqs
        assert kwargs["tensor_parallel_size"] == plan.layout.tensor_parallel_size
        # the pool's copies land on its own group: bundles ask for the role's Ray resource
        bundles = cfg["placement_group_config"]["bundles"]
        assert len(bundles) == plan.layout.tensor_parallel_size and all(b[pool.role] == 1 for b in bundles)
        # KubeRay passes rayStartParams.resources verbatim to `ray start --resources`: a quoted
        # JSON string (KubeRay's ray-cluster.complete sample).
        assert json.loads(json.loads(group["rayStartParams"]["resources"])) == {pool.role: plan.layout.gpus_per_pod}
    assert app["args"]["prefill_config"]["model_loading_config"] == app["args"]["decode_config"]["model_loading_config"]
    assert len(zones) == 1, "both pools in one availability zone (EFA does not cross zones)"
    if gpu_infra is not None:
        (pool,) = [p for p in gpu_infra["pools"] if p["name"] == contract.pool_name(plan.instance, DEFAULTS.release, DEFAULTS.namespace)]
        assert pool["zones"] == sorted(zones) and pool["efa"] is True


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Path]:
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    plan = make_plan(PlanRequest(model="qwen3-8b", instance="g6.8xlarge", topology="disaggregated",
                                 max_model_len=4096))
    path = tmp_path_factory.mktemp("disagg") / "values.yaml"
    values = build_values(plan, ValuesOptions(zone="us-east-1b"))
    path.write_text(yaml.safe_dump(values_document(values), sort_keys=False))
    return plan, path


def test_planned_disaggregated_renders_the_plan(planned, helm_version: str) -> None:
    plan, path = planned
    assert_disaggregated_matches_plan(helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE), plan)


def test_ci_pools_are_sized_separately() -> None:
    rs = rayservice(helm.render(CHART, [CI], namespace=NAMESPACE))
    _, groups = head_and_groups(rs)
    assert {g["groupName"]: g["replicas"] for g in groups} == {"prefill": 1, "decode": 2}
    app = serve_app(rs)
    assert app["args"]["decode_config"]["deployment_config"]["num_replicas"] == 2
    assert "enableInTreeAutoscaling" not in rs["spec"]["rayClusterConfig"], "pools keep the Plan's sizes"
    for g in groups:
        labels = g["template"]["metadata"]["labels"]
        assert labels["vllm-eks.io/role"] == g["groupName"]
        env = {e["name"]: e.get("value") for e in g["template"]["spec"]["containers"][0]["env"]}
        assert env["FI_EFA_USE_HUGE_PAGE"] == "0" and "FI_PROVIDER" not in env


def test_committed_disaggregated_scenario_exists() -> None:
    names = [p.parent.name for p in VALUES.glob("*/plan.json")
             if json.loads(p.read_text())["topology"] == "disaggregated"]
    assert "qwen3-8b-g6-8xlarge-disaggregated" in names

"""charts/vllm-inference topology ray-serve: the KubeRay RayService (head without GPUs, GPU
worker group sized for Serve's maximum, Ray Serve LLM app with the Plan's engine kwargs and
autoscaling), for the ci file and for planner-made and committed Plans (Helm 3 and Helm 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import chart_contract, helm
from vllm_eks.verify.crd_schema import crd_dir_from_env
from tests.harness.paths import CHARTS, VALUES
from vllm_eks.core import contract
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.spec.plan import Plan
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values
from vllm_eks.values.vllm_inference.images import RAY_IMAGE_TAG, RAY_VERSION

# The committed scenarios use the default release and namespace.
DEFAULTS = ValuesOptions()

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
CI = CHART / "ci" / "08-ray-serve-values.yaml"
NAMESPACE = "llm"
CRD = crd_dir_from_env() / "ray.io_rayservices.yaml"


def rayservice(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (rs,) = [o for o in objects if o["kind"] == "RayService"]
    return rs


def serve_app(rs: dict[str, Any]) -> dict[str, Any]:
    (app,) = yaml.safe_load(rs["spec"]["serveConfigV2"])["applications"]
    return app


def head_and_groups(rs: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cluster = rs["spec"]["rayClusterConfig"]
    return cluster["headGroupSpec"], cluster["workerGroupSpecs"]


def assert_head_runs_no_model(head: dict[str, Any]) -> None:
    assert head["rayStartParams"]["num-gpus"] == "0"
    spec = head["template"]["spec"]
    (c,) = spec["containers"]
    assert contract.GPU_RESOURCE not in c["resources"].get("limits", {})
    assert chart_contract.rendered().pool_label not in spec.get("nodeSelector", {}), "the head stays off the GPU pool"
    assert "app.kubernetes.io/instance" in head["template"]["metadata"]["labels"]
    assert {p["name"] for p in c["ports"]} >= {"gcs", "dashboard", "serve", "metrics"}


def assert_rayserve_matches_plan(objects: list[dict[str, Any]], plan: Plan,
                                 gpu_infra: dict[str, Any] | None = None) -> None:
    assert plan.topology == "ray-serve" and plan.serve_autoscaling is not None
    rs = rayservice(objects)
    head, groups = head_and_groups(rs)
    assert_head_runs_no_model(head)
    (group,) = groups
    auto = plan.serve_autoscaling
    assert group["minReplicas"] == auto.min_replicas * plan.layout.nodes_per_replica
    assert group["maxReplicas"] == auto.max_replicas * plan.layout.nodes_per_replica
    assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
    assert rs["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] is True
    (c,) = group["template"]["spec"]["containers"]
    assert c["resources"]["limits"][contract.GPU_RESOURCE] == plan.layout.gpus_per_pod
    pool_label = chart_contract.rendered().pool_label
    assert group["template"]["spec"]["nodeSelector"][pool_label] == contract.pool_name(plan.instance, DEFAULTS.release, DEFAULTS.namespace)
    app = serve_app(rs)
    assert app["import_path"] == "ray.serve.llm:build_openai_app"
    (llm,) = app["args"]["llm_configs"]
    assert llm["model_loading_config"] == {"model_id": plan.served_model_name, "model_source": plan.model_source}
    kwargs = llm["engine_kwargs"]
    assert kwargs["tensor_parallel_size"] == plan.layout.tensor_parallel_size
    assert kwargs["pipeline_parallel_size"] == plan.layout.pipeline_parallel_size == 1
    for key, value in plan.engine.settings.items():
        assert kwargs[key] == value, key
    assert kwargs["max_model_len"] == plan.memory.max_model_len and kwargs["max_num_seqs"] == plan.engine.max_num_seqs
    assert llm["deployment_config"]["autoscaling_config"] == {
        "min_replicas": auto.min_replicas, "max_replicas": auto.max_replicas,
        "target_ongoing_requests": auto.target_ongoing_requests}
    assert llm["deployment_config"]["graceful_shutdown_timeout_s"] == plan.pod.shutdown_timeout_seconds


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Path]:
    from vllm_eks.planning.planner import make_plan
    from vllm_eks.spec.request import PlanRequest

    plan = make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="g6e.12xlarge", topology="ray-serve"))
    path = tmp_path_factory.mktemp("rayserve") / "values.yaml"
    path.write_text(yaml.safe_dump(values_document(build_values(plan, ValuesOptions())), sort_keys=False))
    return plan, path


def test_planned_rayservice_renders_the_plan(planned, helm_version: str) -> None:
    plan, path = planned
    assert_rayserve_matches_plan(helm.render(CHART, [path], helm=helm_version, namespace=NAMESPACE), plan)


def test_ci_rayservice() -> None:
    objects = helm.render(CHART, [CI], namespace=NAMESPACE)
    rs = rayservice(objects)
    head, (group,) = head_and_groups(rs)
    assert_head_runs_no_model(head)
    assert head["template"]["spec"]["nodeSelector"] == {"karpenter.sh/capacity-type": "on-demand"}
    assert rs["spec"]["rayClusterConfig"]["rayVersion"] == RAY_VERSION
    for c in [head["template"]["spec"]["containers"][0], group["template"]["spec"]["containers"][0]]:
        assert c["image"] == f"rayproject/ray-llm:{RAY_IMAGE_TAG}"
        assert RAY_IMAGE_TAG.startswith(RAY_VERSION)
        env = {e["name"]: e for e in c["env"]}
        assert "HF_TOKEN" not in env and env["HF_TOKEN_PATH"]["value"] == "/var/run/secrets/huggingface/token"
    (llm,) = serve_app(rs)["args"]["llm_configs"]
    assert llm["model_loading_config"]["model_id"] == "llama-70b"
    assert llm["engine_kwargs"]["max_num_seqs"] == 24 and llm["engine_kwargs"]["tensor_parallel_size"] == 4
    assert group["maxReplicas"] == 2 and group["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]
    assert not [o for o in objects if o["kind"] in ("Service", "Deployment", "LeaderWorkerSet")]
    (test_pod,) = [o for o in objects if o["kind"] == "Pod"]
    env = {e["name"]: e["value"] for e in test_pod["spec"]["containers"][0]["env"]}
    assert env["BASE_URL"] == f"http://{rs['metadata']['name']}-serve-svc.{NAMESPACE}.svc:8000"


def test_no_deprecated_kuberay_field_is_rendered() -> None:
    """KubeRay deprecated serviceUnhealthySecondThreshold / deploymentUnhealthySecondThreshold
    (DESIGN §8) and the ray.io/v1alpha1 version (the pinned CRD marks it deprecated)."""
    crd = yaml.safe_load(CRD.read_text())
    assert [v["name"] for v in crd["spec"]["versions"] if v.get("deprecated")] == ["v1alpha1"]
    for f in (CI, CHART / "ci" / "09-disaggregated-values.yaml"):
        rs = rayservice(helm.render(CHART, [f], namespace=NAMESPACE))
        assert rs["apiVersion"] == "ray.io/v1"
        assert not {"serviceUnhealthySecondThreshold", "deploymentUnhealthySecondThreshold"} & set(rs["spec"])


def test_committed_rayservice_scenario_exists() -> None:
    names = [p.parent.name for p in VALUES.glob("*/plan.json")
             if json.loads(p.read_text())["topology"] == "ray-serve"]
    assert "llama-3.1-70b-g6e-12xlarge-rayservice" in names


SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def test_only_the_autoscaler_gets_the_api_token() -> None:
    """KubeRay's autoscaler sidecar (enableInTreeAutoscaling) calls the API server under the
    head's ServiceAccount. The pod keeps automountServiceAccountToken off; the autoscaler alone
    mounts the token, CA and namespace; the Ray head container and the workers have none."""
    rs = rayservice(helm.render(CHART, [CI], namespace=NAMESPACE))
    cluster = rs["spec"]["rayClusterConfig"]
    assert cluster["enableInTreeAutoscaling"] is True
    head, groups = head_and_groups(rs)
    spec = head["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False and spec["serviceAccountName"]
    (mount,) = [m for m in cluster["autoscalerOptions"].get("volumeMounts", []) if m["mountPath"] == SA_DIR]
    assert mount["readOnly"] is True
    (vol,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    sources = vol["projected"]["sources"]
    assert {"path": "token", "expirationSeconds": 3607} == sources[0]["serviceAccountToken"]
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.namespace"
    containers = spec["containers"] + [c for g in groups for c in g["template"]["spec"]["containers"]]
    assert not [c["name"] for c in containers if any(m["mountPath"] == SA_DIR for m in c.get("volumeMounts", []))]
    assert all(g["template"]["spec"]["automountServiceAccountToken"] is False for g in groups)


@pytest.mark.parametrize("values", ["08-ray-serve-values.yaml", "09-disaggregated-values.yaml"])
def test_upgrade_strategy_is_explicit(values: str) -> None:
    """The Plan's pool GPU limit admits KubeRay's NewCluster upgrade (a second RayCluster); the
    chart says so instead of depending on the operator's ENABLE_ZERO_DOWNTIME default."""
    rs = rayservice(helm.render(CHART, [CHART / "ci" / values], namespace=NAMESPACE))
    assert rs["spec"]["upgradeStrategy"] == {"type": "NewCluster"}

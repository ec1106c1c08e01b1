"""PodDisruptionBudgets per topology (templates/poddisruptionbudget.yaml, docs/topologies.md
"Node drains"): a single serving unit owned by the chart is kept whole (a drain waits), more units
go one pod at a time, a LeaderWorkerSet budget counts every pod of every group, and a RayService
gets one budget for the head and one for the GPU workers on KubeRay's ray.io/node-type label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
DEPLOYMENT = VALUES / "qwen2.5-7b-g6-xlarge" / "vllm-inference.yaml"
LWS = VALUES / "llama-3.1-405b-p5-48xlarge-lws" / "vllm-inference.yaml"
RAY_SERVE = VALUES / "llama-3.1-70b-g6e-12xlarge-rayservice" / "vllm-inference.yaml"
DISAGGREGATED = VALUES / "qwen3-8b-g6-8xlarge-disaggregated" / "vllm-inference.yaml"
CHART_OWNED = {"replicasManagedExternally": False}


def _objects(values_file: Path, set_values: dict[str, Any], helm_version: str) -> list[dict[str, Any]]:
    return helm.render_case(CHART, values_file, set_values, helm_version, "vllm", "llm")


def _budgets(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "PodDisruptionBudget"}


def _budget_counts(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec[k] for k in ("minAvailable", "maxUnavailable") if k in spec}


def _only_budget(values_file: Path, set_values: dict[str, Any], helm_version: str) -> dict[str, Any]:
    (spec,) = _budgets(_objects(values_file, set_values, helm_version)).values()
    return spec


def test_single_deployment_replica_is_kept_through_a_drain(helm_version: str) -> None:
    spec = _only_budget(DEPLOYMENT, {**CHART_OWNED, "replicas": 1}, helm_version)
    assert _budget_counts(spec) == {"minAvailable": 1}
    assert spec["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


@pytest.mark.parametrize("set_values", [{**CHART_OWNED, "replicas": 3}, {"replicasManagedExternally": True},
                                        {**CHART_OWNED, "replicas": 1,
                                         "podDisruptionBudget.protectSingleServer": False}],
                         ids=["three-replicas", "keda-owned", "override"])
def test_deployment_drains_one_pod_at_a_time(set_values: dict[str, Any], helm_version: str) -> None:
    assert _budget_counts(_only_budget(DEPLOYMENT, set_values, helm_version)) == {"maxUnavailable": 1}


def test_single_lws_group_is_kept_whole(helm_version: str) -> None:
    objects = _objects(LWS, {**CHART_OWNED, "replicas": 1}, helm_version)
    (lws,) = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    (spec,) = _budgets(objects).values()
    assert _budget_counts(spec) == {"minAvailable": lws["spec"]["leaderWorkerTemplate"]["size"]}


def test_lws_budget_counts_every_pod_of_every_group(helm_version: str) -> None:
    """maxUnavailable 1 over the leaders and the workers: at most one group restarts at a time."""
    objects = _objects(LWS, {**CHART_OWNED, "replicas": 2}, helm_version)
    (lws,) = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    (spec,) = _budgets(objects).values()
    assert _budget_counts(spec) == {"maxUnavailable": 1}
    template = lws["spec"]["leaderWorkerTemplate"]
    for pod in (template["leaderTemplate"], template["workerTemplate"]):
        assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()


def _ray_budgets(values_file: Path, set_values: dict[str, Any], helm_version: str,
                 groups: tuple[str, ...]) -> tuple[dict[str, dict], dict[str, Any]]:
    objects = _objects(values_file, set_values, helm_version)
    budgets = _budgets(objects)
    assert set(budgets) == {f"vllm-vllm-inference-ray-{name}" for name in ("head", *groups)}
    (service,) = [o for o in objects if o["kind"] == "RayService"]
    return {name.removeprefix("vllm-vllm-inference-ray-"): spec for name, spec in budgets.items()}, service


def _kuberay_labels(template: dict[str, Any], node_type: str, group: str) -> dict[str, str]:
    """The labels of a pod KubeRay creates from a template: the template's own plus ray.io/node-type
    and ray.io/group (labelPod in ray-operator/controllers/ray/common/pod.go; the head's group is
    headgroup)."""
    return {**template["metadata"]["labels"], "ray.io/node-type": node_type, "ray.io/group": group}


def _selected(budgets: dict[str, dict], labels: dict[str, str]) -> list[str]:
    return [name for name, spec in budgets.items() if spec["selector"]["matchLabels"].items() <= labels.items()]


@pytest.mark.parametrize(("values_file", "set_values", "groups"), [
    (RAY_SERVE, {"rayServe.autoscaling.maxReplicas": 2, "rayServe.workers.maxReplicas": 2}, ("gpu",)),
    (DISAGGREGATED, {"disaggregated.prefill.replicas": 2, "disaggregated.decode.replicas": 3},
     ("prefill", "decode"))], ids=["ray-serve", "disaggregated"])
def test_ray_head_and_each_worker_group_have_their_own_budget(values_file: Path, set_values: dict[str, Any],
                                                               groups: tuple[str, ...], helm_version: str) -> None:
    budgets, service = _ray_budgets(values_file, set_values, helm_version, groups)
    assert _budget_counts(budgets["head"]) == {"maxUnavailable": 0}
    assert all(_budget_counts(budgets[group]) == {"maxUnavailable": 1} for group in groups)
    cluster = service["spec"]["rayClusterConfig"]
    assert _selected(budgets, _kuberay_labels(cluster["headGroupSpec"]["template"], "head", "headgroup")) == ["head"]
    for spec in cluster["workerGroupSpecs"]:
        labels = _kuberay_labels(spec["template"], "worker", spec["groupName"])
        assert _selected(budgets, labels) == [spec["groupName"]]


@pytest.mark.parametrize(("values_file", "set_values", "kept", "loose"), [
    (RAY_SERVE, {"rayServe.autoscaling.minReplicas": 1, "rayServe.autoscaling.maxReplicas": 1}, "gpu", None),
    (DISAGGREGATED, {"disaggregated.prefill.replicas": 1, "disaggregated.decode.replicas": 2}, "prefill", "decode")],
    ids=["ray-serve", "disaggregated"])
def test_a_pool_with_one_model_copy_is_kept_through_a_drain(values_file: Path, set_values: dict[str, Any],
                                                            kept: str, loose: str | None, helm_version: str) -> None:
    groups = ("gpu",) if values_file == RAY_SERVE else ("prefill", "decode")
    budgets, _ = _ray_budgets(values_file, set_values, helm_version, groups)
    assert _budget_counts(budgets[kept]) == {"maxUnavailable": 0}
    if loose:
        assert _budget_counts(budgets[loose]) == {"maxUnavailable": 1}


def test_ray_override_lets_drains_through(helm_version: str) -> None:
    budgets, _ = _ray_budgets(RAY_SERVE, {"podDisruptionBudget.protectSingleServer": False,
                                          "rayServe.autoscaling.minReplicas": 1,
                                          "rayServe.autoscaling.maxReplicas": 1}, helm_version, ("gpu",))
    assert _budget_counts(budgets["head"]) == _budget_counts(budgets["gpu"]) == {"maxUnavailable": 1}


def test_budgets_off(helm_version: str) -> None:
    for values_file in (DEPLOYMENT, LWS, RAY_SERVE):
        assert not _budgets(_objects(values_file, {"podDisruptionBudget.enabled": False}, helm_version))

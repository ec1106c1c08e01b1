"""build_values(plan, options): the gpu-infra values a Plan produces render, validate and agree
with the model server built from the same Plan."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.harness import helm, validate_all
from tests.harness.tools import tool_path
from vllm_eks import contract, fit
from vllm_eks.emit import values_document
from vllm_eks.errors import InvalidOptionError
from vllm_eks.planner import make_plan
from vllm_eks.request import PlanRequest
from vllm_eks.values import gpu_infra
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.registry import CHART_BUILDERS

pytestmark = pytest.mark.render

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "gpu-infra"
GIB = 2**30


def _write(tmp_path: Path, plan, options: ValuesOptions, charts=("gpu-infra",)) -> Path:
    for chart in charts:
        (tmp_path / f"{chart}.yaml").write_text(yaml.safe_dump(values_document(CHART_BUILDERS[chart](plan, options))))
    return tmp_path


def test_registered() -> None:
    assert CHART_BUILDERS["gpu-infra"] is gpu_infra.build_values


def test_single_node_plan() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))
    values = gpu_infra.build_values(plan, ValuesOptions(cluster_name="prod"))
    (pool,) = values.pools
    assert pool.name == contract.pool_name("g6e.xlarge") == "gpu-g6e-xlarge"
    assert pool.instance_types == ["g6e.xlarge"]
    assert pool.gpu_limit == (plan.replicas + 1) * 1
    assert pool.instance_store_policy == "RAID0"  # g6e.xlarge has 250 GB of NVMe
    assert pool.efa is False and values.efa_device_plugin.enabled is False
    assert values.nvidia_device_plugin.enabled is True
    assert values.ami_version == gpu_infra.DEFAULT_AL2023_VERSION and values.ami_version != "latest"
    assert values.discovery.tag_value == "prod" and values.node_role == "KarpenterNodeRole-prod"
    expected = gpu_infra.OS_DISK_BYTES + gpu_infra.IMAGE_DISK_BYTES + plan.ephemeral_storage_bytes
    assert pool.root_volume.size_gi * GIB >= expected > (pool.root_volume.size_gi - 10) * GIB


def test_shared_nodes_count_once() -> None:
    # gpt-oss-120b runs one GPU per replica: eight replicas share one p5.48xlarge.
    plan = make_plan(PlanRequest(model="gpt-oss-120b", instance="p5.48xlarge", replicas=8))
    assert plan.gpus_per_pod == 1
    assert gpu_infra.nodes_needed(plan) == 1
    assert gpu_infra.gpu_limit(plan) == 16


def test_peak_replicas_of_ray_serve_and_disaggregated() -> None:
    base = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))
    ray = base.model_copy(update={"topology": "ray-serve", "serve_autoscaling": {
        "min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8}})
    ray = type(base).model_validate(ray.model_dump())
    assert gpu_infra.peak_replicas(ray) == 4 and gpu_infra.gpu_limit(ray) == (4 + 1) * 1
    pool = {"max_num_seqs": 8, "max_num_batched_tokens": 2048, "engine_args": []}
    dis = type(base).model_validate({**base.model_dump(), "topology": "disaggregated",
                                     "prefill": {"role": "prefill", "replicas": 2, **pool},
                                     "decode": {"role": "decode", "replicas": 3, **pool}})
    assert gpu_infra.peak_replicas(dis) == 5 and gpu_infra.gpu_limit(dis) == 6


def test_multi_node_plan_needs_a_zone() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-405b-instruct", instance="p5.48xlarge"))
    assert plan.efa_devices_per_pod > 0
    with pytest.raises(InvalidOptionError, match="--zone is required"):
        gpu_infra.build_values(plan, ValuesOptions())


def test_multi_node_efa_pool(tmp_path: Path, helm_version: str, crd_registry) -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-405b-instruct", instance="p5.48xlarge"))
    options = ValuesOptions(cluster_name="llm", zone="us-east-1b", placement_group="llm-efa",
                            capacity_reservation_ids=["cr-0123456789abcdef0"])
    values = gpu_infra.build_values(plan, options)
    (pool,) = values.pools
    assert pool.efa and pool.zones == ["us-east-1b"] and values.efa_device_plugin.enabled
    assert pool.capacity_types == ["on-demand", "reserved"]
    assert pool.placement_group is not None and pool.placement_group.name == "llm-efa"
    assert pool.gpu_limit == (plan.replicas + 1) * plan.nodes_per_replica * 8
    _write(tmp_path, plan, options)
    objects = helm.render(CHART, [tmp_path / "gpu-infra.yaml"], helm=helm_version, namespace="gpu-infra")
    for kube in ("1.31", "1.35"):
        validate_all(objects, crd_registry, kube_version=kube)
    (nc,) = [o for o in objects if o["kind"] == "EC2NodeClass"]
    assert nc["spec"]["placementGroupSelector"] == {"name": "llm-efa"}
    assert nc["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    assert any(o["kind"] == "DaemonSet" and o["metadata"]["name"].endswith("efa-device-plugin") for o in objects)


def test_bottlerocket_plan(tmp_path: Path, crd_registry) -> None:
    plan = make_plan(PlanRequest(model="qwen2.5-7b-instruct", instance="g6.xlarge"))
    options = ValuesOptions(ami_family="bottlerocket", capacity_types=["spot", "on-demand"])
    values = gpu_infra.build_values(plan, options)
    assert values.nvidia_device_plugin.enabled is False
    assert values.ami_version == gpu_infra.DEFAULT_BOTTLEROCKET_VERSION
    _write(tmp_path, plan, options, charts=("gpu-infra", "vllm-inference"))
    objects = helm.render(CHART, [tmp_path / "gpu-infra.yaml"], helm="helm4", namespace="gpu-infra")
    validate_all(objects, crd_registry, kube_version="1.33")
    (nc,) = [o for o in objects if o["kind"] == "EC2NodeClass"]
    assert nc["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@" + gpu_infra.DEFAULT_BOTTLEROCKET_VERSION}]
    devices = [b["deviceName"] for b in nc["spec"]["blockDeviceMappings"]]
    assert devices == ["/dev/xvda", "/dev/xvdb"]
    assert [b["deviceName"] for b in nc["spec"]["blockDeviceMappings"] if b.get("rootVolume")] == ["/dev/xvdb"]
    assert fit.check_fit(tmp_path, helm=str(tool_path("helm4"))) == []

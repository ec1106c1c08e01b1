"""build_values(plan, options): the gpu-infra values a Plan produces render, validate and agree
with the model server built from the same Plan."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.harness import chart_contract, helm, validate_all
from tests.harness.paths import CHARTS
from tests.harness.tools import tool_path
from vllm_eks.check import scheduling as fit
from vllm_eks.core import contract
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values import gpu_infra
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.registry import CHART_BUILDERS

pytestmark = pytest.mark.render

CHART = CHARTS / "gpu-infra"


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
    assert pool.name == contract.pool_name("g6e.xlarge", "vllm", "llm") == "llm-vllm-g6e-xlarge"
    assert pool.instance_types == ["g6e.xlarge"]
    assert pool.gpu_limit == plan.pool.pool_gpu_limit
    assert pool.instance_store_policy == "RAID0"  # g6e.xlarge has 250 GB of NVMe
    assert pool.efa is False and values.efa_device_plugin.enabled is False
    assert values.nvidia_device_plugin.enabled is True
    assert values.ami_version == gpu_infra.DEFAULT_AL2023_VERSION and values.ami_version != "latest"
    # the role and discovery tag follow clusterName in the chart (test_cluster_name_drives_role_and_discovery)
    assert values.cluster_name == "prod" and values.discovery.tag_value == "" and values.node_role == ""
    assert pool.root_volume.size_gi * GIB == plan.pool.root_volume_bytes


def test_multi_node_plan_needs_a_zone() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-405b-instruct", instance="p5.48xlarge"))
    assert plan.pod.efa_devices_per_pod > 0
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
    assert pool.gpu_limit == plan.pool.pool_gpu_limit
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


# Kinds gpu-infra renders without a namespace: one object per name in the whole cluster.
CLUSTER_SCOPED = {"NodePool", "EC2NodeClass", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "RuntimeClass"}


def test_two_releases_on_one_instance_type_share_no_cluster_scoped_name(tmp_path: Path) -> None:
    """Two models on p5.48xlarge, each with its own gpu-infra release (as `vllm-eks values` writes
    them): no cluster-scoped object of one release has the name of the other's (Helm would refuse
    the second install: the object belongs to another release), each release's DaemonSets land
    only on its own pool, and each model server selects its own release's pool."""
    scenarios = [("llama-3.1-70b-instruct", "llama70b"), ("gpt-oss-120b", "gptoss")]
    names: list[set[tuple[str, str]]] = []
    pools: list[set[str]] = []
    for model, release in scenarios:
        plan = make_plan(PlanRequest(model=model, instance="p5.48xlarge"))
        options = ValuesOptions(release=release, namespace="llm")
        out = tmp_path / release
        out.mkdir()
        _write(out, plan, options, charts=("gpu-infra", "vllm-inference"))
        objects = helm.render(CHART, [out / "gpu-infra.yaml"], release=f"gpu-{release}", namespace="gpu-infra")
        scoped = {(o["kind"], o["metadata"]["name"]) for o in objects if o["kind"] in CLUSTER_SCOPED}
        assert {k for k, _ in scoped} == {"NodePool", "EC2NodeClass"}
        assert not any("namespace" in o["metadata"] for o in objects if o["kind"] in CLUSTER_SCOPED)
        names.append(scoped)
        pool_label = chart_contract.rendered().pool_label
        own = {np["spec"]["template"]["metadata"]["labels"][pool_label]
               for np in objects if np["kind"] == "NodePool"}
        pools.append(own)
        for ds in (o for o in objects if o["kind"] == "DaemonSet"):
            terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            selected = {v for t in terms for e in t["matchExpressions"] if e["key"] == pool_label
                        for v in e["values"]}
            assert selected == own, f"{release}: DaemonSet {ds['metadata']['name']} lands on {selected}"
        server = yaml.safe_load((out / "vllm-inference.yaml").read_text())
        assert server["scheduling"]["pool"] in own
    assert not names[0] & names[1], f"cluster-scoped names shared by the two releases: {names[0] & names[1]}"
    assert not pools[0] & pools[1]

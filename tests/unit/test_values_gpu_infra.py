"""charts/gpu-infra values built from a Plan (pure Python; rendering is in tests/render)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values import gpu_infra
from vllm_eks.values.options import ValuesOptions


@pytest.fixture(scope="module")
def efa_plan():
    return make_plan(PlanRequest(model="llama-3.1-405b-instruct", instance="p5.48xlarge"))


@pytest.mark.parametrize("value, kind", [
    ("pg-llm", "name"),                       # a name that merely starts with pg-
    ("pg-0123", "name"),                      # too short for an id
    ("pg-0123456789abcdef0", "id"),           # pg- + 17 hex characters: an EC2 placement group id
    ("pg-0123456789ABCDEF0", "name"),         # ids are lower-case hex
    ("pg-0123456789abcdefg", "name"),         # g is not hex
    ("pg-0123456789abcdef01", "name"),        # 18 characters
    ("llm-efa", "name"),
])
def test_placement_group_id_only_when_it_has_the_id_form(efa_plan, value: str, kind: str) -> None:
    values = gpu_infra.build_values(efa_plan, ValuesOptions(zone="us-east-1a", placement_group=value))
    (pool,) = values.pools
    assert pool.placement_group is not None
    assert pool.placement_group.model_dump(exclude_none=True) == {kind: value}


def test_placement_group_id_schema_is_exact() -> None:
    assert gpu_infra.PlacementGroup(id="pg-0123456789abcdef0").id
    with pytest.raises(ValidationError):
        gpu_infra.PlacementGroup(id="pg-llm")


def test_a_catalog_type_is_checked_by_the_chart(efa_plan) -> None:
    (pool,) = gpu_infra.build_values(efa_plan, ValuesOptions(zone="us-east-1a")).pools
    assert pool.allow_unlisted_instance_types is None


def test_hardware_outside_the_catalog_is_allowed_unlisted() -> None:
    """A plan on a type the catalog lacks (described by flags here, or read from EC2) is meant: the
    values say so, or the chart would refuse the pool's instance type."""
    plan = make_plan(PlanRequest(model="llama-3.1-8b-instruct", gpu_memory_mib=96000, gpus_per_node=1,
                                 hardware_name="g9.2xlarge", vcpus=8, memory_gib=64))
    (pool,) = gpu_infra.build_values(plan, ValuesOptions()).pools
    assert pool.instance_types == ["g9.2xlarge"]
    assert pool.allow_unlisted_instance_types is True


def test_the_charts_instance_catalog_is_the_generators() -> None:
    from tests.harness.paths import CHARTS
    from vllm_eks.catalog.instances import instance_catalog
    text = (CHARTS / "gpu-infra" / "files" / "instance-catalog.txt").read_text()
    listed = {line for line in text.splitlines() if line and not line.startswith("#")}
    assert listed == set(instance_catalog()), "charts/gpu-infra/files/instance-catalog.txt is stale: run make schemas"

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

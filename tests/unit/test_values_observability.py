"""charts/observability values built from a Plan (pure Python; rendering is in tests/render)."""

from __future__ import annotations

import pytest

from vllm_eks.chart_values import observability
from vllm_eks.chart_values.options import ValuesOptions
from vllm_eks.planner import make_plan
from vllm_eks.request import PlanRequest
from vllm_eks.values_yaml import forkable_values


@pytest.fixture(scope="module")
def plan():
    return make_plan(PlanRequest(model="qwen2.5-7b-instruct", instance="g6.xlarge"))


def test_gateway_routing_enables_the_picker_monitor(plan) -> None:
    values = observability.build_values(plan, ValuesOptions(routing="gateway", gateway_name="inference-gateway"))
    assert values.monitors.picker == observability.PickerMonitor(enabled=True)
    doc = forkable_values(values, plan.topology, observability.TOPOLOGY_SECTIONS)
    assert doc["monitors"] == {"picker": {"enabled": True}}, "only the switch is written; the rest are chart defaults"


@pytest.mark.parametrize("routing", ["service", "alb"])
def test_other_routing_leaves_the_picker_monitor_off(plan, routing: str) -> None:
    values = observability.build_values(plan, ValuesOptions(routing=routing))
    assert not values.monitors.picker.enabled
    assert "monitors" not in forkable_values(values, plan.topology, observability.TOPOLOGY_SECTIONS)


def test_default_routing_leaves_the_picker_monitor_off(plan) -> None:
    assert not observability.build_values(plan, ValuesOptions()).monitors.picker.enabled

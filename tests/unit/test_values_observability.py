"""charts/observability values built from a Plan (pure Python; rendering is in tests/render)."""

from __future__ import annotations

import pytest

from vllm_eks.output.values_files import forkable_values
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values import observability
from vllm_eks.values.options import ValuesOptions


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


def test_cost_price_is_the_plans_replica_price(plan) -> None:
    """cost.pricePerReplicaHourUsd is the Plan's cost_per_hour_usd: one replica, all its nodes or
    its share of one node's GPUs (pools.plan_cost), not the node price."""
    v = observability.build_values(plan, ValuesOptions())
    assert v.cost.price_per_replica_hour_usd == plan.cost.cost_per_hour_usd > 0
    tp4 = make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="g6e.12xlarge", price_per_hour=40.0))
    share = tp4.layout.gpus_per_pod / tp4.node.gpus_per_node * tp4.layout.nodes_per_replica
    assert observability.build_values(tp4, ValuesOptions()).cost.price_per_replica_hour_usd == pytest.approx(40.0 * share)


def test_no_price_writes_zero(plan) -> None:
    """Hardware outside the catalog without --price-per-hour has no price: 0 leaves the cost rules out."""
    p = make_plan(PlanRequest(model="qwen2.5-7b-instruct", gpu_memory_mib=81559, gpus_per_node=1,
                              hardware_name="x1.gpu"))
    assert p.cost.cost_per_hour_usd is None
    assert observability.build_values(p, ValuesOptions()).cost.price_per_replica_hour_usd == 0


@pytest.mark.parametrize("key", ["severity", "alertname"])
def test_alert_labels_may_not_replace_each_alerts_own(key: str) -> None:
    from pydantic import ValidationError

    from vllm_eks.values.observability import Rules
    with pytest.raises(ValidationError, match=f"rules.additionalAlertLabels.{key}: set by each alert"):
        Rules(additional_alert_labels={"team": "ml", key: "none"})
    assert Rules(additional_alert_labels={"team": "ml"}).additional_alert_labels == {"team": "ml"}

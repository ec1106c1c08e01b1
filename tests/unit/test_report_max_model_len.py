"""`vllm-eks plan`'s table says why max_model_len is below the model's maximum context."""

from __future__ import annotations

from vllm_eks.output.report import summary_rows
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest


def _row(plan) -> str:
    return dict(summary_rows(plan))["max model len"]


def test_lowered_length_names_the_model_maximum_and_the_reason() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))
    assert plan.memory.max_model_len < 131072
    why = next(d.formula for d in plan.derivations if d.key == "max_model_len")
    assert "concurrent full-length requests" in why
    assert _row(plan) == f"{plan.memory.max_model_len:,}, below the model's 131,072: {why}"


def test_pinned_length_says_it_was_pinned() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge", max_model_len=4096))
    assert _row(plan) == "4,096, below the model's 131,072: pinned by --max-model-len"


def test_full_length_is_just_the_number() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="p5.48xlarge"))
    assert plan.memory.max_model_len == 131072
    assert _row(plan) == "131,072"


def test_model_maximum_stays_out_of_plan_json() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))
    assert "model_max_len" not in plan.json_summary()

"""Default latency SLOs derived from the layout (latency.py)."""

import pytest

from vllm_eks.catalog.models import resolve_model
from vllm_eks.planning.latency import DEFAULT_TPOT_SLO, DEFAULT_TTFT_SLO, active_parameters
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest


def test_moe_counts_only_routed_experts():
    a = resolve_model("qwen3-235b-a22b").architecture
    assert 21e9 < active_parameters(a) < 23.5e9          # "A22B"
    dense = resolve_model("llama-3.1-8b-instruct").architecture
    from vllm_eks.model.weights import total_parameters
    assert active_parameters(dense) == total_parameters(dense)


def test_llama_8b_on_l40s_by_hand():
    p = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))
    prefill = 2 * 8.03e9 * 2048 / (362e12 * 0.4)
    decode = p.memory.weights_bytes_total / (864e9 * 0.6)
    assert p.slo.slo_ttft_p99_seconds == pytest.approx(round(4 * prefill, 2), abs=0.01)
    assert p.slo.slo_tpot_p99_seconds == pytest.approx(round(3 * decode, 3), abs=0.001)


def test_more_gpus_never_slower_and_floors_hold():
    one = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="p5.48xlarge", tensor_parallel_size=1))
    eight = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="p5.48xlarge", tensor_parallel_size=8))
    assert eight.slo.slo_ttft_p99_seconds <= one.slo.slo_ttft_p99_seconds
    assert eight.slo.slo_tpot_p99_seconds <= one.slo.slo_tpot_p99_seconds
    assert eight.slo.slo_ttft_p99_seconds >= 0.5 and eight.slo.slo_tpot_p99_seconds >= 0.03


def test_unknown_hardware_keeps_fixed_defaults():
    p = make_plan(PlanRequest(model="llama-3.1-8b-instruct", gpu_memory_mib=81559, gpus_per_node=1,
                              hardware_name="p5.4xlarge"))
    assert (p.slo.slo_ttft_p99_seconds, p.slo.slo_tpot_p99_seconds) == (DEFAULT_TTFT_SLO, DEFAULT_TPOT_SLO)


def test_observability_values_carry_the_plan_slos():
    from vllm_eks.values.observability import build_values
    from vllm_eks.values.options import ValuesOptions
    p = make_plan(PlanRequest(model="qwen2.5-7b-instruct", instance="g6.xlarge"))
    v = build_values(p, ValuesOptions())
    assert v.rules.slo.ttft_p99_seconds == p.slo.slo_ttft_p99_seconds
    assert v.rules.slo.tpot_p99_seconds == p.slo.slo_tpot_p99_seconds

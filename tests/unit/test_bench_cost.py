"""Cost per million tokens, with seed 004 §9's figure."""

import pytest

from tests.unit.bench_synthetic import write_sweep
from vllm_eks.bench.cost import cost_per_million_tokens, point_cost, resolve_price
from vllm_eks.bench.results import load_sweep
from vllm_eks.core.errors import InvalidOptionError


def test_seed_004_figure():
    """2,000 output tokens/s on a $50/hour instance is $6.94 per million output tokens."""
    assert round(cost_per_million_tokens(50.0, 2000.0), 2) == 6.94
    assert cost_per_million_tokens(50.0, 2000.0) == pytest.approx(50 / 7.2)


@pytest.mark.parametrize("price, tps, usd", [(3600.0, 1e6, 1.0), (1.0, 1.0, 1e6 / 3600), (0.0, 10.0, 0.0)])
def test_formula(price, tps, usd):
    assert cost_per_million_tokens(price, tps) == pytest.approx(usd)


def test_no_tokens_has_no_cost():
    assert cost_per_million_tokens(10.0, 0.0) is None


def test_point_cost_output_and_total(tmp_path):
    # 2,000 output tokens/s with 256-token prompts and 128-token outputs: 6,000 total tokens/s
    r = load_sweep(write_sweep(tmp_path, [(8, 2000.0), (16, 2100.0)]))[0]
    price = resolve_price(50.0, "spot", None, 1, "")
    pc = point_cost("knee", r, price)
    assert round(pc.usd_per_million_output_tokens, 2) == 6.94
    assert round(pc.usd_per_million_total_tokens, 4) == round(50 / (6000 * 3600) * 1e6, 4)
    assert price.capacity_type == "spot" and price.source == "--price-per-hour"


def test_price_from_plan_is_per_replica_times_replicas():
    p = resolve_price(None, "on-demand", 1.861, 3, "plan.json cost_per_hour_usd")
    assert p.usd_per_hour == pytest.approx(5.583) and "x 3 replica(s)" in p.source
    assert resolve_price(None, "on-demand", None, 1, "") is None


@pytest.mark.parametrize("capacity", ["spot", "reserved"])
def test_spot_and_reserved_need_a_price(capacity):
    with pytest.raises(InvalidOptionError, match=f"--capacity-type {capacity} needs --price-per-hour"):
        resolve_price(None, capacity, 1.0, 1, "")


def test_negative_price():
    with pytest.raises(InvalidOptionError, match="--price-per-hour must be >= 0, got -1"):
        resolve_price(-1.0, "on-demand", None, 1, "")

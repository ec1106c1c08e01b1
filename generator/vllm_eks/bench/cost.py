"""Cost per million tokens from an hourly price and a measured token rate (seed 004 §9):

    cost per 1M tokens = price per hour / (tokens per second x 3600) x 1,000,000

2,000 output tokens/s on a $50/hour instance: 50 / 7,200,000 x 1e6 = $6.94 per million output
tokens. The price is that of everything the measured endpoint ran on (all replicas, all nodes):
a sweep measures the endpoint, not one GPU."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from vllm_eks.bench.results import BenchResult
from vllm_eks.core.errors import InvalidOptionError

CapacityType = Literal["on-demand", "spot", "reserved"]


def cost_per_million_tokens(usd_per_hour: float, tokens_per_second: float) -> float | None:
    """USD per million tokens; None when nothing was produced (no finite cost)."""
    if usd_per_hour < 0:
        raise InvalidOptionError(f"--price-per-hour must be >= 0, got {usd_per_hour}")
    if tokens_per_second <= 0:
        return None
    cost = usd_per_hour / (tokens_per_second * 3600) * 1_000_000
    return cost if math.isfinite(cost) else None  # a rate so small no float holds its cost


class Price(BaseModel):
    usd_per_hour: float = Field(ge=0, description="Of everything the measured endpoint ran on")
    capacity_type: CapacityType
    source: str


def resolve_price(price_per_hour: float | None, capacity_type: CapacityType,
                  replica_usd_per_hour: float | None, replicas: int, replica_source: str) -> Price | None:
    """--price-per-hour wins; otherwise the on-demand price of one replica (from the Plan or the
    catalog) times the replicas measured. The catalog has on-demand prices only, so spot and
    reserved need --price-per-hour. None: no price known (costs are left out)."""
    if price_per_hour is not None:
        if price_per_hour < 0:
            raise InvalidOptionError(f"--price-per-hour must be >= 0, got {price_per_hour}")
        return Price(usd_per_hour=price_per_hour, capacity_type=capacity_type, source="--price-per-hour")
    if capacity_type != "on-demand":
        raise InvalidOptionError(f"--capacity-type {capacity_type} needs --price-per-hour: the catalog "
                                 "(data/instances.csv, usd_hr_us_east_1) holds on-demand prices only")
    if replica_usd_per_hour is None:
        return None
    return Price(usd_per_hour=replica_usd_per_hour * replicas, capacity_type=capacity_type,
                 source=f"{replica_source} ${replica_usd_per_hour:g}/h per replica x {replicas} replica(s)")


class PointCost(BaseModel):
    """Costs at one operating point (a measured concurrency level)."""

    label: str
    concurrency: int
    output_tokens_per_s: float
    total_tokens_per_s: float
    usd_per_million_output_tokens: float | None
    usd_per_million_total_tokens: float | None


def point_cost(label: str, r: BenchResult, price: Price) -> PointCost:
    return PointCost(label=label, concurrency=r.concurrency, output_tokens_per_s=r.output_throughput,
                     total_tokens_per_s=r.total_token_throughput,
                     usd_per_million_output_tokens=cost_per_million_tokens(price.usd_per_hour, r.output_throughput),
                     usd_per_million_total_tokens=cost_per_million_tokens(price.usd_per_hour, r.total_token_throughput))

"""The knee of a concurrency sweep and the highest concurrency within the latency SLO.

Knee (seed 004 §8: throughput levels off while latency climbs; run at the knee): between two
measured levels c1 < c2, throughput gain and latency growth are taken per doubling of
concurrency, so sweeps with uneven steps compare alike: gain = (T2 / T1) ** (1 / log2(c2 / c1)) - 1.
The knee is the smallest measured concurrency from which the next measured level gains less than
`min_gain_pct` output throughput per doubling while p99 TTFT or p99 TPOT grows by more than
`max_latency_growth_pct` per doubling. Without such a level there is no knee in the measured
range; the level of highest output throughput stands in for it, and the report says why.

SLO limit: the highest measured concurrency at which p99 TTFT and p99 TPOT are within the SLO,
and all lower levels are too (a level past the first violation is not counted: it meets the SLO
by noise, not by capacity)."""

from __future__ import annotations

import itertools
import math

from pydantic import BaseModel, Field

from vllm_eks.bench.results import BenchResult
from vllm_eks.core.errors import InvalidOptionError

DEFAULT_MIN_GAIN_PCT = 10.0
DEFAULT_LATENCY_GROWTH_PCT = 20.0


class KneeCriteria(BaseModel):
    min_gain_pct: float = Field(DEFAULT_MIN_GAIN_PCT, ge=0)
    max_latency_growth_pct: float = Field(DEFAULT_LATENCY_GROWTH_PCT, ge=0)

    def definition(self) -> str:
        return (f"knee: the smallest measured concurrency from which the next measured level gains less than "
                f"{self.min_gain_pct:g}% output tokens/s per doubling of concurrency while p99 TTFT or p99 TPOT "
                f"grows by more than {self.max_latency_growth_pct:g}% per doubling "
                f"(per doubling: (next / this) ** (1 / log2(next concurrency / this concurrency)) - 1)")


class Step(BaseModel):
    """From one measured level to the next, per doubling of concurrency, in percent."""

    from_concurrency: int
    to_concurrency: int
    throughput_gain_pct: float | None = Field(description="None: from zero throughput (unbounded)")
    ttft_p99_growth_pct: float | None
    tpot_p99_growth_pct: float | None

    @property
    def gain(self) -> float:
        return math.inf if self.throughput_gain_pct is None else self.throughput_gain_pct

    @property
    def latency_growth(self) -> float:
        return max(math.inf if g is None else g for g in (self.ttft_p99_growth_pct, self.tpot_p99_growth_pct))


class Knee(BaseModel):
    concurrency: int
    found: bool = Field(description="False: no level met the definition; the highest-throughput level stands in")
    reason: str
    definition: str
    steps: list[Step]


class SloLimit(BaseModel):
    ttft_p99_seconds: float
    tpot_p99_seconds: float
    concurrency: int | None = Field(description="None: even the lowest level misses the SLO")
    reason: str


def _per_doubling_pct(before: float, after: float, doublings: float) -> float | None:
    """None: growth from zero, unbounded."""
    if before <= 0:
        return 0.0 if after <= 0 else None
    try:
        pct = ((after / before) ** (1 / doublings) - 1) * 100
    except OverflowError:
        return None
    # from a denormal to a normal figure the ratio leaves float range: unbounded as from zero
    return pct if math.isfinite(pct) else None


def steps(results: list[BenchResult]) -> list[Step]:
    out = []
    for a, b in itertools.pairwise(results):
        d = math.log2(b.concurrency / a.concurrency)
        out.append(Step(from_concurrency=a.concurrency, to_concurrency=b.concurrency,
                        throughput_gain_pct=_per_doubling_pct(a.output_throughput, b.output_throughput, d),
                        ttft_p99_growth_pct=_per_doubling_pct(a.p99_ttft_ms, b.p99_ttft_ms, d),
                        tpot_p99_growth_pct=_per_doubling_pct(a.p99_tpot_ms, b.p99_tpot_ms, d)))
    return out


def find_knee(results: list[BenchResult], criteria: KneeCriteria | None = None) -> Knee:
    """`results` sorted by concurrency (results.load_sweep), at least two levels."""
    c = criteria or KneeCriteria()
    st = steps(results)
    for s in st:
        latency = s.latency_growth
        if s.gain < c.min_gain_pct and latency > c.max_latency_growth_pct:
            return Knee(concurrency=s.from_concurrency, found=True, definition=c.definition(), steps=st,
                        reason=(f"{s.from_concurrency} -> {s.to_concurrency}: output tokens/s "
                                f"{s.gain:+.1f}% per doubling, p99 latency {latency:+.1f}% per doubling"))
    best = max(results, key=lambda r: r.output_throughput)
    last = st[-1]
    if last.gain >= c.min_gain_pct:
        why = (f"output tokens/s still gains {last.gain:.1f}% per doubling at the top of the sweep "
               f"({last.from_concurrency} -> {last.to_concurrency}): extend the sweep to higher concurrency")
    else:
        why = "throughput levels off without p99 latency growing past the limit"
    return Knee(concurrency=best.concurrency, found=False, definition=c.definition(), steps=st,
                reason=f"no knee in the measured range ({why}); the level of highest output throughput, "
                       f"{best.concurrency}, stands in")


def slo_limit(results: list[BenchResult], ttft_p99_seconds: float, tpot_p99_seconds: float) -> SloLimit:
    if ttft_p99_seconds <= 0 or tpot_p99_seconds <= 0:
        raise InvalidOptionError(f"--slo-ttft-p99 and --slo-tpot-p99 must be > 0 seconds, got "
                                 f"{ttft_p99_seconds} and {tpot_p99_seconds}")
    best: int | None = None
    reason = "every measured level is within the SLO"
    for r in results:
        misses = []
        if r.p99_ttft_ms > ttft_p99_seconds * 1000:
            misses.append(f"p99 TTFT {r.p99_ttft_ms / 1000:.3f} s > {ttft_p99_seconds:g} s")
        if r.p99_tpot_ms > tpot_p99_seconds * 1000:
            misses.append(f"p99 TPOT {r.p99_tpot_ms / 1000:.4f} s > {tpot_p99_seconds:g} s")
        if misses:
            reason = f"concurrency {r.concurrency} misses it: " + ", ".join(misses)
            break
        best = r.concurrency
    return SloLimit(ttft_p99_seconds=ttft_p99_seconds, tpot_p99_seconds=tpot_p99_seconds, concurrency=best,
                    reason=reason)

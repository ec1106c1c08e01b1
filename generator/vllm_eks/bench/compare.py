"""The Plan's own estimates beside the measured figures, as ratios measured / estimate (1.0: the
estimate was right; above 1: reality is slower or larger than the Plan assumed).

The decode step is the routing section's single-request decode rate inverted. The Plan does not
store its prefill estimate: the TTFT SLO is it times a headroom (latency.py: p99 TTFT =
max(floor, 4 x prefill of a typical prompt)); dividing by the headroom gives it back unless the
floor was taken, in which case the ratio is left out and the comparison says so. A plan.json
without a routing section gets its decode step from the TPOT SLO the same way."""

from __future__ import annotations

import math

from pydantic import BaseModel

from vllm_eks.bench.results import BenchResult
from vllm_eks.planning import latency
from vllm_eks.spec.plan import Plan


class Ratio(BaseModel):
    name: str
    measured: float | None
    estimate: float | None
    ratio: float | None
    unit: str
    compares: str


def _ratio(name: str, measured: float | None, estimate: float | None, unit: str, compares: str) -> Ratio:
    r = measured / estimate if measured is not None and estimate else None
    r = r if r is None or math.isfinite(r) else None
    return Ratio(name=name, measured=measured, estimate=estimate, ratio=r, unit=unit, compares=compares)


def compare(plan: Plan, results: list[BenchResult], knee: int, replicas: int) -> list[Ratio]:
    low = results[0]
    at_knee = next(r for r in results if r.concurrency == knee)
    at = f"at concurrency {low.concurrency}" + ("" if low.concurrency == 1 else
                                                " (the lowest measured; the estimate is for one request alone)")
    out: list[Ratio] = []

    tpot_slo, ttft_slo = plan.slo.slo_tpot_p99_seconds, plan.slo.slo_ttft_p99_seconds
    if plan.routing is not None:
        rate = plan.routing.decode_tokens_per_second
        decode: float | None = 1 / rate
        basis = f"1 / decode_tokens_per_second {rate:g}"
    else:  # a plan.json from before the routing section: the TPOT SLO without its headroom
        decode = tpot_slo / latency.TPOT_HEADROOM if tpot_slo > latency.TPOT_FLOOR else None
        basis = (f"slo_tpot_p99_seconds {tpot_slo:g} / headroom {latency.TPOT_HEADROOM:g}" if decode else
                 f"the TPOT SLO is the {latency.TPOT_FLOOR:g} s floor and the plan has no routing section, "
                 "so the estimate is not known")
    out.append(_ratio("decode step (TPOT p50)", low.median_tpot_ms / 1000, decode, "s",
                      f"measured p50 TPOT {at} vs the Plan's memory-bandwidth decode step ({basis})"))
    typical = min(plan.memory.max_model_len, latency.TYPICAL_PROMPT_TOKENS)
    prefill = (ttft_slo / latency.TTFT_HEADROOM * low.mean_input_tokens / typical
               if ttft_slo > latency.TTFT_FLOOR else None)
    out.append(_ratio("prefill (TTFT p50)", low.median_ttft_ms / 1000, prefill, "s",
                      f"measured p50 TTFT {at} vs the Plan's compute-bound prefill estimate (slo_ttft_p99_seconds "
                      f"{ttft_slo:g} / headroom {latency.TTFT_HEADROOM:g}, scaled from {typical} to the measured "
                      f"{low.mean_input_tokens:.0f} prompt tokens)"
                      + ("" if prefill
                         else f"; the SLO is the {latency.TTFT_FLOOR:g} s floor, so the estimate is not known")))
    out.append(_ratio("TPOT p99 at the knee / SLO", at_knee.p99_tpot_ms / 1000, tpot_slo, "s",
                      f"measured p99 TPOT at the knee ({knee}) vs the Plan's TPOT SLO: above 1 the TPOT alert "
                      "would fire at the knee"))
    out.append(_ratio("TTFT p99 at the knee / SLO", at_knee.p99_ttft_ms / 1000, ttft_slo, "s",
                      f"measured p99 TTFT at the knee ({knee}) vs the Plan's TTFT SLO: above 1 the TTFT alert "
                      "would fire at the knee"))
    per_replica = knee / replicas
    seqs = plan.decode.max_num_seqs if plan.decode else plan.engine.max_num_seqs
    out.append(_ratio("knee per replica / max_num_seqs", per_replica, seqs, "sequences",
                      f"measured knee per replica ({knee} / {replicas} replica(s)) vs the Plan's max_num_seqs"
                      + (" of the decode pool" if plan.decode else "") + ": "
                      "below 1 the engine admits more sequences than it serves well"))
    shape = at_knee.mean_input_tokens + at_knee.mean_output_tokens
    kv_room = plan.memory.kv_cache_tokens / shape if shape > 0 else None
    out.append(_ratio("knee per replica / KV cache room", per_replica, kv_room, "sequences",
                      f"measured knee per replica vs the sequences the Plan's KV cache holds at the measured request "
                      f"shape (kv_cache_tokens {plan.memory.kv_cache_tokens} / {shape:.0f} tokens per request): "
                      "near 1 the knee is the KV cache filling up, well below 1 it is compute or bandwidth"))
    return out

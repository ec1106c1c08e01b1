"""Engine and autoscaling settings from a sweep.

- max_num_seqs = the knee concurrency per replica (the sweep measures the whole endpoint; its
  replicas share the concurrency): past it vLLM should queue rather than admit work it cannot
  serve well (seed 004 §8).
- KEDA threshold on vllm:num_requests_waiting per replica: a replica at the knee completes
  R = request_throughput at the knee / replicas requests per second, so a new request behind W
  waiting ones waits about W / R seconds before it starts (Little's law). Scaling out once
  W = floor(R x (TTFT SLO - p99 TTFT at the knee)) keeps that wait within the TTFT budget the knee
  leaves. Without a TTFT SLO: a quarter of max_num_seqs waiting (the Plan's queue-alert rule)."""

from __future__ import annotations

import math

from pydantic import BaseModel

from vllm_eks.bench.results import BenchResult


class Recommendation(BaseModel):
    max_num_seqs: int
    max_num_seqs_reason: str
    keda_queue_threshold: int
    keda_queue_threshold_reason: str


def recommend(at_knee: BenchResult, replicas: int, slo_ttft_p99_seconds: float | None) -> Recommendation:
    seqs = max(1, at_knee.concurrency // replicas)
    seqs_why = f"knee {at_knee.concurrency} / {replicas} replica(s), rounded down, at least 1"
    rate = at_knee.request_throughput / replicas
    if slo_ttft_p99_seconds is None:
        threshold = max(1, math.ceil(seqs / 4))
        why = f"no TTFT SLO given: max(1, max_num_seqs {seqs} / 4)"
    else:
        budget = slo_ttft_p99_seconds - at_knee.p99_ttft_ms / 1000
        if budget <= 0:
            threshold = 1
            why = (f"p99 TTFT at the knee {at_knee.p99_ttft_ms / 1000:.3f} s already exceeds the SLO "
                   f"{slo_ttft_p99_seconds:g} s: scale at the first waiting request")
        else:
            threshold = max(1, math.floor(rate * budget))
            why = (f"floor({rate:.3f} requests/s per replica at the knee x (TTFT SLO {slo_ttft_p99_seconds:g} s "
                   f"- p99 TTFT at the knee {at_knee.p99_ttft_ms / 1000:.3f} s)), at least 1: the wait behind "
                   "that many queued requests stays within the TTFT budget")
    return Recommendation(max_num_seqs=seqs, max_num_seqs_reason=seqs_why, keda_queue_threshold=threshold,
                          keda_queue_threshold_reason=why)

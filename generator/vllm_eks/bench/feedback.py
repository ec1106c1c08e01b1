"""`--from-benchmark`: a `vllm bench serve` sweep sets the Plan's max_num_seqs and KEDA threshold.

The Plan is made as without the sweep (the estimate), the sweep is analysed against it (analyze.py:
its replicas, SLOs and price), and the Plan is made again with the sweep's recommendations:

- max_num_seqs = the recommendation (the knee per replica), but never more than the Plan's KV cache
  holds of the measured requests at once: kv_cache_blocks // blocks of one request (mean input +
  output tokens at the knee, in blocks of block_size). More running sequences than that only
  preempt each other, whatever the sweep measured (it may have run on other hardware or a
  smaller model length). It is also kept within max_num_batched_tokens, which vLLM requires.
  max_num_seqs sizes the sampler's memory, so the KV cache is checked again on the new Plan (and
  the limit taken from that Plan when it holds fewer); the written Plan's cache holds at least
  max_num_seqs such requests.
- the KEDA threshold (vllm:num_requests_waiting per replica) = the recommendation.

A sweep whose chosen level produced no output tokens, or lost more than MAX_FAILED_FRACTION of its
requests, is refused (naming the file): it measured failures, and the knee of failures is no
setting for a serving endpoint.

The sweep must be of the model the Plan serves: every result's model_id (what `vllm bench serve
--model` named) must be the Plan's served_model_name or its model_source (the Hugging Face repo id
`vllm bench serve` also accepts with its own --served-model-name); anything else is an error, since
another model's knee would size this one. Results without model_id are accepted (nothing to compare).

With `vllm-eks values --routing gateway|alb`, a sweep whose results record vllm_eks_target
"service" (the chart's benchmark Job without benchmark.baseUrl) gets a one-line warning: it measured
the Service's per-connection balancing, not the routing layer the values put in front. `plan` and
`explain` take no --routing, so they cannot tell and print nothing."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from vllm_eks.bench.analyze import analyze
from vllm_eks.bench.results import BenchResult, load_sweep, sweep_target
from vllm_eks.core.derivations import Derivation, Derivations
from vllm_eks.core.errors import BenchmarkResultError, InvalidOptionError
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.plan import MeasuredPlan, Plan
from vllm_eks.spec.request import PlanRequest

FLAG = "--from-benchmark"
# Re-planning with a new max_num_seqs changes the sampler's memory and so the KV cache; the clamp
# settles in one or two rounds (a smaller max_num_seqs only frees memory).
MAX_ROUNDS = 4
# Most failed requests a level may have to set max_num_seqs: past it the level measures failures.
MAX_FAILED_FRACTION = 0.1


def check_model(sweep: list[BenchResult], plan: Plan) -> None:
    accepted = {plan.served_model_name, plan.model_source}
    for r in sweep:
        if r.model_id is not None and r.model_id not in accepted:
            raise BenchmarkResultError(
                f"{FLAG} {r.source}: model_id {r.model_id!r} is not the model this Plan serves "
                f"(served_model_name {plan.served_model_name!r}, model source {plan.model_source!r}); "
                "give the sweep of this deployment's model (vllm bench serve --model <served_model_name>)")


def target_warning(sweep: list[BenchResult], routing: str | None) -> str | None:
    """A warning when the values route through a gateway or an ALB but the sweep measured the Service."""
    if routing not in ("gateway", "alb") or sweep_target(sweep) != "service":
        return None
    layer = "the Gateway and its endpoint picker" if routing == "gateway" else "the ALB"
    return (f"{FLAG}: the sweep measured the release's Service (vllm_eks_target service) but --routing {routing} "
            f"sends requests through {layer}; run it again with benchmark.baseUrl set to the URL users call")


def check_usable(at: BenchResult, knee_found: bool) -> None:
    """The level that would set max_num_seqs must have measured a serving endpoint: output
    tokens, and most requests answered. Otherwise its "knee" is where the failures are, and
    max_num_seqs from it (1 for a sweep that produced nothing) would be a wrong number."""
    point = f"concurrency {at.concurrency} ({'the knee' if knee_found else 'no knee: the highest-throughput level'})"
    total = at.completed + at.failed
    if at.output_throughput <= 0:
        raise BenchmarkResultError(
            f"{at.source}: no output tokens at {point}: the sweep measured no serving endpoint, so it "
            "cannot size max-num-seqs; fix the deployment and run `vllm-eks bench run` again, or drop --from-benchmark")
    if at.failed > MAX_FAILED_FRACTION * total:
        raise BenchmarkResultError(
            f"{at.source}: {at.failed} of {total} requests failed at {point} (more than "
            f"{MAX_FAILED_FRACTION:.0%}): its figures are those of failures, not of serving; fix the failures "
            "(the level's .log) and run the sweep again, or drop --from-benchmark")


def kv_max_num_seqs(plan: Plan, tokens_per_request: float) -> int:
    """Requests of `tokens_per_request` tokens the Plan's KV cache holds at once (whole blocks)."""
    blocks = max(1, math.ceil(tokens_per_request / plan.memory.block_size))
    return plan.memory.kv_cache_blocks // blocks


def _measured(estimate: Plan, sweep: list[BenchResult], paths: list[str], kv_plan: Plan) -> tuple[MeasuredPlan, str]:
    a = analyze(paths, results=sweep, plan=estimate)
    rec = a.recommendation
    at = next(r for r in sweep if r.concurrency == a.knee.concurrency)
    check_usable(at, a.knee.found)
    per_request = round(at.mean_input_tokens + at.mean_output_tokens, 1)
    kv_limit = kv_max_num_seqs(kv_plan, per_request)
    batched = kv_plan.engine.max_num_batched_tokens
    seqs = max(1, min(rec.max_num_seqs, kv_limit, batched))
    clamped = seqs < rec.max_num_seqs
    knee = f"knee at concurrency {a.knee.concurrency}" + ("" if a.knee.found else " (highest level: no knee reached)")
    files = f"{len(sweep)} result files"
    why = f"measured: {rec.max_num_seqs_reason} ({knee}, {files})"
    if clamped:
        limit_why = (f"the KV cache holds {kv_limit} requests of {per_request:.0f} tokens "
                     f"({kv_plan.memory.kv_cache_blocks:,} blocks of {kv_plan.memory.block_size} tokens)"
                     if kv_limit <= batched else f"max_num_batched_tokens is {batched}")
        why += f"; clamped from {rec.max_num_seqs} to {seqs}: {limit_why}"
    m = MeasuredPlan(
        sources=[Path(r.source).name for r in sweep], levels=[r.concurrency for r in sweep],
        knee_concurrency=a.knee.concurrency, knee_found=a.knee.found, replicas=a.replicas,
        output_tokens_per_s=at.output_throughput, requests_per_s=at.request_throughput,
        ttft_p99_seconds=at.p99_ttft_ms / 1000, tokens_per_request=per_request,
        recommended_max_num_seqs=rec.max_num_seqs, kv_max_num_seqs=kv_limit, max_num_seqs=seqs, clamped=clamped,
        keda_queue_threshold=rec.keda_queue_threshold)
    m.derivations = _derivations(m, a.knee.reason, rec.keda_queue_threshold_reason)
    return m, why


def _derivations(m: MeasuredPlan, knee_reason: str, keda_why: str) -> list[Derivation]:
    d = Derivations()
    d.add("measured", f"knee at concurrency {m.knee_concurrency}",
          f"measured: {len(m.sources)} result files ({', '.join(m.sources)}), levels "
          f"{', '.join(map(str, m.levels))}; at the knee {m.output_tokens_per_s:.1f} output tokens/s, "
          f"{m.requests_per_s:.3f} requests/s, p99 TTFT {m.ttft_p99_seconds:.3f} s over {m.replicas} replica(s)",
          f"{FLAG}; {knee_reason}")
    d.add("keda_queue_threshold", str(m.keda_queue_threshold), f"measured: {keda_why}",
          "observability autoscaling.threshold (vllm:num_requests_waiting per replica)")
    if m.clamped:
        d.add("max_num_seqs (measured)", f"{m.max_num_seqs} (recommended {m.recommended_max_num_seqs})",
              f"min(recommendation {m.recommended_max_num_seqs}, KV cache holds {m.kv_max_num_seqs} requests of "
              f"{m.tokens_per_request:.0f} tokens)", "the KV cache bounds the running sequences")
    return d.items


def plan_from_benchmark(req: PlanRequest, paths: list[str], routing: str | None = None,
                        warn: Callable[[str], None] | None = None) -> Plan:
    """The Plan with max_num_seqs and the KEDA threshold from the sweep in `paths` (files or
    folders of `vllm bench serve` results); every error names --from-benchmark. `routing` (the
    values' --routing, None when the command has none) and `warn` report a sweep of the wrong target."""
    if req.max_num_seqs is not None:
        raise InvalidOptionError(f"{FLAG} sets max_num_seqs from the sweep; --max-num-seqs {req.max_num_seqs} "
                           "conflicts with it: give one of them")
    for path in paths:
        try:
            Path(path).stat()
        except (OSError, ValueError) as e:  # quoted: the message shows the path as given
            shown = path if len(path) <= 80 else path[:80] + "..."
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise BenchmarkResultError(f"{FLAG} {shown!r}: cannot read: {why}") from None
    estimate = make_plan(req)
    try:
        sweep = load_sweep(paths)
    except BenchmarkResultError as e:
        raise BenchmarkResultError(f"{FLAG}: {e}") from None
    check_model(sweep, estimate)
    warning = target_warning(sweep, routing)
    if warning and warn:
        warn(warning)
    try:
        kv_plan = estimate
        for _ in range(MAX_ROUNDS):
            measured, why = _measured(estimate, sweep, paths, kv_plan)
            plan = make_plan(req, measured=measured, measured_seqs_why=why)
            if kv_max_num_seqs(plan, measured.tokens_per_request) >= measured.max_num_seqs:
                return plan
            kv_plan = plan
    except BenchmarkResultError as e:
        raise BenchmarkResultError(f"{FLAG}: {e}") from None
    raise AssertionError("the KV clamp did not settle")  # a smaller max_num_seqs never shrinks the cache

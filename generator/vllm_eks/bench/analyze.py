"""`vllm-eks bench analyze`: a sweep's table, knee, SLO limit, costs, Plan comparison and
recommendations, as one model (`--json` prints it) and as rich tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from vllm_eks.bench.compare import Ratio, compare
from vllm_eks.bench.cost import CapacityType, PointCost, Price, point_cost, resolve_price
from vllm_eks.bench.knee import Knee, KneeCriteria, SloLimit, find_knee, slo_limit
from vllm_eks.bench.results import BenchResult, load_sweep, sweep_base_url, sweep_notes, sweep_target
from vllm_eks.bench.sweep_settings import Recommendation, recommend
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.json_input import JsonInputError, read_json
from vllm_eks.spec.plan import Plan


class Level(BaseModel):
    concurrency: int
    output_tokens_per_s: float
    requests_per_s: float
    total_tokens_per_s: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    tpot_p50_ms: float
    tpot_p99_ms: float
    completed: int
    failed: int
    source: str


class Analysis(BaseModel):
    replicas: int
    # the results' vllm_eks_target: service, route, unknown (no such metadata) or mixed
    target: str = "unknown"
    base_url: str | None = None
    levels: list[Level]
    knee: Knee
    slo: SloLimit | None
    price: Price | None
    costs: list[PointCost]
    comparison: list[Ratio]
    recommendation: Recommendation
    plan: str | None
    notes: list[str] = []
    plots: list[str] = []


def load_plan(path: str) -> Plan:
    """A scenario's plan.json (`vllm-eks plan --json`); errors name the file and the key."""
    try:
        data = read_json(Path(path))
    except OSError as e:
        raise InvalidOptionError(f"--plan {path}: cannot read: {e.strerror or e}") from None
    except JsonInputError as e:
        raise InvalidOptionError(f"--plan {path}: {e}") from None
    if not isinstance(data, dict):
        raise InvalidOptionError(f"--plan {path}: expected the JSON object `vllm-eks plan --json` prints")
    try:
        return Plan.from_summary(data)
    except KeyError as e:
        raise InvalidOptionError(
            f"--plan {path}: missing key {e.args[0]!r} (write it with `vllm-eks plan --json`)") from None
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise InvalidOptionError(f"--plan {path}: {where}: {err['msg']}") from None


def serving_replicas(plan: Plan) -> int:
    """Model copies that share the measured concurrency: the decode pods of a disaggregated
    deployment, else the Plan's replicas."""
    return plan.decode.replicas if plan.decode else plan.layout.replicas


def _level(r: BenchResult) -> Level:
    return Level(concurrency=r.concurrency, output_tokens_per_s=r.output_throughput,
                 requests_per_s=r.request_throughput, total_tokens_per_s=r.total_token_throughput,
                 ttft_p50_ms=r.median_ttft_ms, ttft_p99_ms=r.p99_ttft_ms, tpot_p50_ms=r.median_tpot_ms,
                 tpot_p99_ms=r.p99_tpot_ms, completed=r.completed, failed=r.failed, source=r.source)


def analyze(paths: list[str], plan: Plan | None = None, plan_path: str | None = None,
            price_per_hour: float | None = None, capacity_type: CapacityType = "on-demand",
            slo_ttft_p99_seconds: float | None = None, slo_tpot_p99_seconds: float | None = None,
            replicas: int | None = None, criteria: KneeCriteria | None = None,
            results: list[BenchResult] | None = None) -> Analysis:
    """The whole analysis. SLO flags override the Plan's slo section; replicas default to the
    Plan's (else 1): the number of model copies behind the measured endpoint."""
    sweep = results if results is not None else load_sweep(paths)
    if replicas is None:
        replicas = serving_replicas(plan) if plan else 1
    if replicas < 1:
        raise InvalidOptionError(f"--replicas must be >= 1, got {replicas}")
    # disaggregated: requests end on the decode pods, but the prefill pods are paid for too
    priced = replicas + (plan.prefill.replicas if plan and plan.prefill and plan.decode else 0)
    knee = find_knee(sweep, criteria)
    by_level = {r.concurrency: r for r in sweep}

    ttft = (slo_ttft_p99_seconds if slo_ttft_p99_seconds is not None
            else (plan.slo.slo_ttft_p99_seconds if plan else None))
    tpot = (slo_tpot_p99_seconds if slo_tpot_p99_seconds is not None
            else (plan.slo.slo_tpot_p99_seconds if plan else None))
    if (ttft is None) != (tpot is None):
        raise InvalidOptionError("give both --slo-ttft-p99 and --slo-tpot-p99 (or --plan for its slo section)")
    slo = slo_limit(sweep, ttft, tpot) if ttft is not None and tpot is not None else None

    price = resolve_price(price_per_hour, capacity_type, plan.cost.cost_per_hour_usd if plan else None,
                          priced, f"{plan_path or 'plan'} cost_per_hour_usd")
    costs: list[PointCost] = []
    if price is not None:
        costs.append(point_cost("knee", by_level[knee.concurrency], price))
        if slo is not None and slo.concurrency is not None:
            costs.append(point_cost("SLO limit", by_level[slo.concurrency], price))

    return Analysis(replicas=replicas, target=sweep_target(sweep), base_url=sweep_base_url(sweep),
                    levels=[_level(r) for r in sweep], knee=knee, slo=slo, price=price,
                    costs=costs, comparison=compare(plan, sweep, knee.concurrency, replicas) if plan else [],
                    recommendation=recommend(by_level[knee.concurrency], replicas, ttft), plan=plan_path,
                    notes=sweep_notes(sweep))


def _num(v: float | None, fmt: str = "{:.2f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _usd(v: float | None) -> str:
    return "n/a" if v is None else (f"{v:,.2f}" if v >= 1 else f"{v:.4f}")


_TARGETS = {"service": "the release's Service (per-connection balancing, no gateway or endpoint picker)",
            "route": "benchmark.baseUrl (the routing layer users call)",
            "unknown": "unknown (the results carry no vllm_eks_target: not run by the chart's benchmark Job)",
            "mixed": "mixed: the levels record different vllm_eks_target values"}


def target_text(a: Analysis) -> str:
    what = _TARGETS.get(a.target, a.target)
    if a.target in ("service", "route"):
        return f"{a.target}: {what}" + (f" at {a.base_url}" if a.base_url else "")
    return what


def render(a: Analysis, console: Console) -> None:
    t = Table(title=f"Concurrency sweep ({len(a.levels)} levels, {a.replicas} replica(s))")
    for col in ("concurrency", "output tok/s", "req/s", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms",
                "TPOT p99 ms", "ok/failed", "marks"):
        t.add_column(col, justify="right" if col not in ("marks",) else "left")
    for lv in a.levels:
        marks = []
        if lv.concurrency == a.knee.concurrency:
            marks.append("knee" if a.knee.found else "knee (stand-in)")
        if a.slo and lv.concurrency == a.slo.concurrency:
            marks.append("SLO limit")
        t.add_row(str(lv.concurrency), f"{lv.output_tokens_per_s:.1f}", f"{lv.requests_per_s:.3f}",
                  f"{lv.ttft_p50_ms:.1f}", f"{lv.ttft_p99_ms:.1f}", f"{lv.tpot_p50_ms:.2f}", f"{lv.tpot_p99_ms:.2f}",
                  f"{lv.completed}/{lv.failed}", ", ".join(marks))
    console.print(t)

    console.print(f"[bold]Measured through:[/bold] {target_text(a)}")
    console.print(f"[bold]Knee:[/bold] concurrency {a.knee.concurrency} ({a.knee.reason})")
    console.print(f"  definition: {a.knee.definition}")
    if a.slo is None:
        console.print("[bold]SLO limit:[/bold] no SLO (give --plan, or --slo-ttft-p99 and --slo-tpot-p99)")
    else:
        where = "none: the lowest level misses it" if a.slo.concurrency is None else f"concurrency {a.slo.concurrency}"
        console.print(f"[bold]SLO limit[/bold] (p99 TTFT <= {a.slo.ttft_p99_seconds:g} s, p99 TPOT <= "
                      f"{a.slo.tpot_p99_seconds:g} s, this level and every lower one): {where} ({a.slo.reason})")

    if a.price is None:
        console.print("[bold]Cost:[/bold] no price (give --price-per-hour, or --plan with cost_per_hour_usd)")
    else:
        c = Table(title=f"Cost at ${a.price.usd_per_hour:g}/hour {a.price.capacity_type}",
                  caption=f"price: {a.price.source}; USD per 1M tokens = price per hour / (tokens/s x 3600) x 1e6")
        for col in ("point", "concurrency", "output tok/s", "total tok/s", "$ / 1M output", "$ / 1M total"):
            c.add_column(col, justify="left" if col == "point" else "right")
        for pc in a.costs:
            c.add_row(pc.label, str(pc.concurrency), f"{pc.output_tokens_per_s:.1f}", f"{pc.total_tokens_per_s:.1f}",
                      _usd(pc.usd_per_million_output_tokens), _usd(pc.usd_per_million_total_tokens))
        console.print(c)

    if a.comparison:
        r = Table(title=f"Plan ({a.plan}) vs measured: ratio = measured / estimate")
        for col in ("figure", "measured", "estimate", "ratio", "what it compares"):
            r.add_column(col, justify="right" if col in ("measured", "estimate", "ratio") else "left")
        for x in a.comparison:
            fmt = "{:.4g}"
            r.add_row(x.name, _num(x.measured, fmt) + f" {x.unit}", _num(x.estimate, fmt) + f" {x.unit}",
                      _num(x.ratio), x.compares)
        console.print(r)

    rec = a.recommendation
    console.print(f"[bold]Recommended --max-num-seqs:[/bold] {rec.max_num_seqs} ({rec.max_num_seqs_reason})")
    console.print(f"[bold]Recommended KEDA threshold[/bold] (vllm:num_requests_waiting per replica): "
                  f"{rec.keda_queue_threshold} ({rec.keda_queue_threshold_reason})")
    for n in a.notes:
        console.print(f"[yellow]note:[/yellow] {n}")
    for p in a.plots:
        console.print(f"plot: {p}")


def to_json(a: Analysis) -> dict[str, Any]:
    return a.model_dump(mode="json")

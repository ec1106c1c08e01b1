"""The `vllm-eks bench` click group: `run` (a concurrency sweep with vllm bench serve) and
`analyze` (the report). Input errors are VllmEksError: the top-level group prints them as one
line and exits 1."""

from __future__ import annotations

import json
import math

import click
from rich.console import Console

from vllm_eks.bench.knee import DEFAULT_LATENCY_GROWTH_PCT, DEFAULT_MIN_GAIN_PCT, KneeCriteria

# Upper bounds of analyze's numbers: far above any endpoint's price, any latency limit and any
# percentage a knee criterion means, and low enough that costs and budgets stay in float range.
MAX_USD_PER_HOUR = 1e6
MAX_SLO_SECONDS = 86400.0
MAX_PCT = 1e6


@click.group()
def bench() -> None:
    """Benchmark sweeps: run `vllm bench serve` over concurrencies and analyse the results."""


@bench.command("analyze")
@click.argument("results", nargs=-1)
@click.option("--plan", "plan_path", help="A scenario's plan.json (`vllm-eks plan --json`): SLOs, price, replicas "
              "and the estimates to compare.")
@click.option("--price-per-hour", type=float, help="USD per hour of everything the endpoint ran on "
              "(default: the Plan's on-demand cost_per_hour_usd x replicas).")
@click.option("--capacity-type", type=click.Choice(["on-demand", "spot", "reserved"]), default="on-demand",
              show_default=True, help="Which price --price-per-hour is (spot and reserved need --price-per-hour).")
@click.option("--slo-ttft-p99", type=float, help="p99 TTFT limit in seconds (default: the Plan's).")
@click.option("--slo-tpot-p99", type=float, help="p99 TPOT limit in seconds (default: the Plan's).")
@click.option("--replicas", type=int,
              help="Model copies sharing the measured concurrency (default: the Plan's replicas, "
                   "its decode pods when disaggregated, else 1).")
@click.option("--knee-min-gain", type=float, default=DEFAULT_MIN_GAIN_PCT, show_default=True,
              help="Knee: throughput gain per doubling of concurrency (%) below which more concurrency buys little.")
@click.option("--knee-latency-growth", type=float, default=DEFAULT_LATENCY_GROWTH_PCT, show_default=True,
              help="Knee: p99 TTFT or TPOT growth per doubling (%) above which latency climbs.")
@click.option("--plots", "plots_dir", help="Folder to write throughput.png and latency.png into.")
@click.option("--json", "as_json", is_flag=True, help="Print the analysis as one JSON object.")
def analyze_command(results: tuple[str, ...], plan_path: str | None, price_per_hour: float | None, capacity_type: str,
                    slo_ttft_p99: float | None, slo_tpot_p99: float | None, replicas: int | None,
                    knee_min_gain: float, knee_latency_growth: float, plots_dir: str | None, as_json: bool) -> None:
    """Analyse `vllm bench serve --save-result` files (or folders of them), one per concurrency
    level: table, knee, SLO limit, cost per million tokens, Plan comparison, recommendations."""
    from pathlib import Path

    from vllm_eks.bench.analyze import analyze, load_plan, render, to_json
    from vllm_eks.bench.results import load_sweep
    from vllm_eks.core.errors import InvalidOptionError

    for flag, value, most in (("--price-per-hour", price_per_hour, MAX_USD_PER_HOUR),
                              ("--slo-ttft-p99", slo_ttft_p99, MAX_SLO_SECONDS),
                              ("--slo-tpot-p99", slo_tpot_p99, MAX_SLO_SECONDS),
                              ("--knee-min-gain", knee_min_gain, MAX_PCT),
                              ("--knee-latency-growth", knee_latency_growth, MAX_PCT)):
        if value is not None and not (math.isfinite(value) and value <= most):
            raise InvalidOptionError(f"{flag} {value:g}: give a finite number of at most {most:g}")
    if knee_min_gain < 0 or knee_latency_growth < 0:
        raise InvalidOptionError(f"--knee-min-gain and --knee-latency-growth must be >= 0, got "
                                 f"{knee_min_gain} and {knee_latency_growth}")
    plan = load_plan(plan_path) if plan_path else None
    sweep = load_sweep(list(results))
    a = analyze(list(results), results=sweep, plan=plan, plan_path=plan_path, price_per_hour=price_per_hour,
                capacity_type=capacity_type,  # type: ignore[arg-type]
                slo_ttft_p99_seconds=slo_ttft_p99, slo_tpot_p99_seconds=slo_tpot_p99, replicas=replicas,
                criteria=KneeCriteria(min_gain_pct=knee_min_gain, max_latency_growth_pct=knee_latency_growth))
    if plots_dir:
        from vllm_eks.bench.plots import write_plots

        a.plots = [str(p) for p in write_plots(sweep, Path(plots_dir), knee=a.knee.concurrency,
                                               slo_limit=a.slo.concurrency if a.slo else None)]
    if as_json:
        click.echo(json.dumps(to_json(a), indent=2, allow_nan=False))
    else:
        render(a, Console(width=200))


@bench.command("run")
@click.option("--url", required=True, help="Base URL of the OpenAI-compatible endpoint, e.g. http://localhost:8000.")
@click.option("--model", required=True, help="Model name the endpoint serves (also the tokenizer unless --tokenizer).")
@click.option("--concurrency", default="1,2,4,8", show_default=True, help="Concurrency levels, comma-separated.")
@click.option("--input-len", type=int, default=256, show_default=True, help="Random prompt length in tokens.")
@click.option("--output-len", type=int, default=128, show_default=True, help="Random output length in tokens.")
@click.option("--num-prompts", type=int, help="Requests per level (default: max(20, 5 x concurrency)).")
@click.option("--dataset", help="A dataset file instead of random prompts (vllm bench serve --dataset-path).")
@click.option("--dataset-name", default="custom", show_default=True,
              help="vllm bench serve --dataset-name of --dataset (custom: JSONL with a prompt field; sharegpt).")
@click.option("--tokenizer", help="Tokenizer name or path, when --model is not one.")
@click.option("--out", "out_dir", required=True, help="Folder for the result JSON files (concurrency-NNNN.json) "
              "and each level's log.")
@click.option("--vllm", help="The vllm executable (default: vllm on PATH); a command prefix is split like a shell.")
def run_command(url: str, model: str, concurrency: str, input_len: int, output_len: int, num_prompts: int | None,
                dataset: str | None, dataset_name: str, tokenizer: str | None, out_dir: str, vllm: str | None) -> None:
    """Run `vllm bench serve --save-result` once per concurrency level against a running endpoint."""
    from pathlib import Path

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from vllm_eks.bench.runner import check_inputs, parse_levels, run_sweep, vllm_command

    levels = parse_levels(concurrency)
    command = vllm_command(vllm)
    check_inputs(Path(out_dir), input_len, output_len, num_prompts, dataset)
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} levels"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("vllm bench serve", total=len(levels))

        def on_level(c: int, state: str) -> None:
            if state == "start":
                progress.update(task, description=f"vllm bench serve at concurrency {c}")
            else:
                progress.advance(task)

        written = run_sweep(command, url, model, levels, Path(out_dir), input_len=input_len, output_len=output_len,
                            num_prompts=num_prompts, dataset=dataset, dataset_name=dataset_name, tokenizer=tokenizer,
                            on_level=on_level)
    for p in written:
        click.echo(str(p))

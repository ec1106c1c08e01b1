"""The Plan comparison, the recommendations and the whole analysis."""

import json
from pathlib import Path

import pytest

from tests.unit.bench_synthetic import CPU_SWEEP, write_sweep
from vllm_eks.bench.analyze import analyze
from vllm_eks.bench.compare import compare
from vllm_eks.bench.results import load_sweep
from vllm_eks.bench.sweep_settings import recommend
from vllm_eks.planning import latency
from vllm_eks.spec.plan import Plan


@pytest.fixture(scope="module")
def plan_8b(tmp_path_factory):
    from click.testing import CliRunner

    from vllm_eks.cli.main import main

    r = CliRunner().invoke(main, ["plan", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--json"])
    assert r.exit_code == 0, r.stderr
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(r.stdout)
    return path, Plan.from_summary(json.loads(r.stdout))


def test_compare_ratios(plan_8b):
    _, plan = plan_8b
    sweep = load_sweep([str(CPU_SWEEP)])
    by = {x.name: x for x in compare(plan, sweep, knee=8, replicas=1)}
    decode = by["decode step (TPOT p50)"]
    assert decode.estimate == pytest.approx(1 / plan.routing.decode_tokens_per_second)
    assert decode.ratio == pytest.approx(0.110 / decode.estimate)
    assert "at concurrency 1 " in decode.compares
    assert by["TPOT p99 at the knee / SLO"].ratio == pytest.approx(0.1329 / plan.slo.slo_tpot_p99_seconds)
    assert by["TTFT p99 at the knee / SLO"].ratio == pytest.approx(1.017 / plan.slo.slo_ttft_p99_seconds)
    assert by["knee per replica / max_num_seqs"].ratio == pytest.approx(8 / plan.engine.max_num_seqs)
    assert by["knee per replica / KV cache room"].estimate == pytest.approx(plan.memory.kv_cache_tokens / 384)


def test_plan_without_routing_uses_the_tpot_slo(plan_8b):
    _, plan = plan_8b
    old = plan.model_copy(update={"routing": None})
    sweep = load_sweep([str(CPU_SWEEP)])
    decode = compare(old, sweep, 8, 1)[0]
    assert plan.slo.slo_tpot_p99_seconds > latency.TPOT_FLOOR
    assert decode.estimate == pytest.approx(plan.slo.slo_tpot_p99_seconds / latency.TPOT_HEADROOM)
    floored = old.model_copy(update={"slo": plan.slo.model_copy(update={"slo_tpot_p99_seconds": latency.TPOT_FLOOR})})
    decode = compare(floored, sweep, 8, 1)[0]
    assert decode.estimate is None and decode.ratio is None and "floor" in decode.compares
    prefill = compare(floored.model_copy(update={"slo": floored.slo.model_copy(
        update={"slo_ttft_p99_seconds": latency.TTFT_FLOOR})}), sweep, 8, 1)[1]
    assert prefill.estimate is None and "floor" in prefill.compares


def test_recommend_little_law(tmp_path):
    # at the knee (16): 4,000 output tokens/s / 128 tokens = 31.25 requests/s over 2 replicas
    sweep = load_sweep(write_sweep(tmp_path, [(8, 3000.0, 300.0, 20.0), (16, 4000.0, 500.0, 25.0)]))
    r = recommend(sweep[1], replicas=2, slo_ttft_p99_seconds=1.5)
    assert r.max_num_seqs == 8
    assert r.keda_queue_threshold == int(31.25 / 2 * (1.5 - 0.5))  # 15
    assert recommend(sweep[1], 2, 0.4).keda_queue_threshold == 1     # the knee already misses the SLO
    assert recommend(sweep[1], 2, None).keda_queue_threshold == 2    # max_num_seqs 8 / 4
    assert recommend(sweep[0], 16, None).max_num_seqs == 1


def test_analysis_with_plan(plan_8b):
    path, plan = plan_8b
    a = analyze([str(CPU_SWEEP)], plan=plan, plan_path=str(path))
    assert a.knee.concurrency == 8 and a.replicas == plan.layout.replicas
    assert a.price.usd_per_hour == pytest.approx(plan.cost.cost_per_hour_usd * plan.layout.replicas)
    assert a.costs[0].label == "knee"
    assert a.costs[0].usd_per_million_output_tokens == pytest.approx(
        a.price.usd_per_hour / (a.levels[3].output_tokens_per_s * 3600) * 1e6)
    assert len(a.comparison) == 6


def test_analysis_flags_override_the_plan(plan_8b):
    path, plan = plan_8b
    a = analyze([str(CPU_SWEEP)], plan=plan, plan_path=str(path), slo_ttft_p99_seconds=30,
                slo_tpot_p99_seconds=0.2, price_per_hour=50, capacity_type="reserved", replicas=1)
    assert a.slo.concurrency == 16
    assert [c.label for c in a.costs] == ["knee", "SLO limit"]
    assert a.price.capacity_type == "reserved" and a.price.usd_per_hour == 50


def test_disaggregated_plan_prices_both_pools(cli, plan_json, tmp_path):
    d = plan_json("--model", "qwen3-8b", "--instance", "g6.8xlarge", "--topology", "disaggregated",
                  "--prefill-replicas", "2", "--decode-replicas", "3")
    plan = Plan.from_summary(d)
    a = analyze([str(CPU_SWEEP)], plan=plan)
    assert a.replicas == 3
    assert a.price.usd_per_hour == pytest.approx(plan.cost.cost_per_hour_usd * 5)
    seqs = next(x for x in a.comparison if x.name == "knee per replica / max_num_seqs")
    assert seqs.estimate == plan.decode.max_num_seqs and "decode pool" in seqs.compares


def _with_target(paths: list[str], target: str, url: str) -> None:
    for p in paths:
        d = json.loads(Path(p).read_text())
        d["vllm_eks_target"], d["vllm_eks_base_url"] = target, url
        Path(p).write_text(json.dumps(d))


def test_the_analysis_names_what_the_sweep_measured(cli, tmp_path):
    rows = [(8, 3000.0, 300.0, 20.0), (16, 4000.0, 500.0, 25.0)]
    bare = write_sweep(tmp_path / "bare", rows)
    r = cli("bench", "analyze", *bare, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["target"] == "unknown" and json.loads(r.stdout)["base_url"] is None
    r = cli("bench", "analyze", *bare)
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("Measured through:")]
    assert "unknown" in line
    routed = write_sweep(tmp_path / "routed", rows)
    _with_target(routed, "route", "https://llm.example.com")
    a = json.loads(cli("bench", "analyze", *routed, "--json").stdout)
    assert (a["target"], a["base_url"]) == ("route", "https://llm.example.com")
    (line,) = [x for x in cli("bench", "analyze", *routed).stdout.splitlines() if x.startswith("Measured through:")]
    assert "route" in line and "https://llm.example.com" in line
    _with_target(routed[:1], "service", "http://r.ns.svc:8000")
    a = json.loads(cli("bench", "analyze", *routed, "--json").stdout)
    assert a["target"] == "mixed" and any("different targets" in n for n in a["notes"])

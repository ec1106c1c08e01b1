"""`values/plan/explain --from-benchmark`: a sweep's max-num-seqs (clamped to the KV cache) and KEDA
threshold reach the Plan and the values, the Plan records the measured basis, explain shows it, and
bad input is one line naming --from-benchmark."""

import json
from pathlib import Path

import yaml

from tests.unit.bench_synthetic import CPU_SWEEP, result_dict
from tests.unit.cli_result import one_line_error
from vllm_eks.spec.plan import Plan

# The fixture sweep is of Qwen/Qwen2.5-0.5B-Instruct (its model_id): the Plan's served_model_name.
QWEN = ["--model", "qwen2.5-0.5b-instruct", "--instance", "g6.xlarge"]



def test_values_write_the_measured_settings(cli, tmp_path):
    out = tmp_path / "out"
    r = cli("values", *QWEN, "--from-benchmark", str(CPU_SWEEP), "--out", str(out))
    assert r.exit_code == 0, r.stderr
    plan = json.loads((out / "plan.json").read_text())
    m = plan["measured"]
    assert m["knee_concurrency"] == 8 and m["knee_found"] and m["replicas"] == 1
    assert m["levels"] == [1, 2, 4, 8, 16, 32]
    assert sorted(m["sources"]) == sorted(p.name for p in CPU_SWEEP.glob("*.json"))
    assert m["recommended_max_num_seqs"] == 8 and m["max_num_seqs"] == 8 and not m["clamped"]
    assert m["output_tokens_per_s"] > 0 and m["tokens_per_request"] == 384.0
    assert plan["max_num_seqs"] == 8 and plan["engine_settings"]["max_num_seqs"] == 8
    # the queue alert follows the measured KEDA target
    assert plan["queue_alert_threshold"] == max(2 * m["keda_queue_threshold"], 2)

    engine = yaml.safe_load((out / "vllm-inference.yaml").read_text())["engine"]
    assert engine["maxNumSeqs"] == 8 and "--max-num-seqs" not in engine["args"]
    obs = yaml.safe_load((out / "observability.yaml").read_text())
    assert obs["autoscaling"]["threshold"] == m["keda_queue_threshold"]
    assert obs["rules"]["thresholds"]["queueDepthPerReplica"] == plan["queue_alert_threshold"]
    assert obs["cost"]["pricePerReplicaHourUsd"] == plan["cost_per_hour_usd"]
    # the README's command and explanation carry the measured basis
    readme = (out / "README.md").read_text()
    assert "--from-benchmark" in readme and "measured:" in readme
    # plan.json reads back with its measured section
    assert Plan.from_summary(plan).measured.model_dump() == m


def test_values_without_a_sweep_keep_the_estimates(cli, tmp_path):
    r = cli("values", *QWEN, "--out", str(tmp_path / "out"))
    assert r.exit_code == 0, r.stderr
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert "measured" not in plan
    obs = yaml.safe_load((tmp_path / "out" / "observability.yaml").read_text())
    assert obs["autoscaling"]["threshold"] == 5


def test_explain_shows_the_measured_basis(cli):
    r = cli("explain", *QWEN, "--from-benchmark", str(CPU_SWEEP))
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    i = lines.index("max_num_seqs = 8")
    assert lines[i + 1].strip().startswith("= measured: knee 8 / 1 replica(s)"), lines[i + 1]
    assert "measured = knee at concurrency 8" in lines
    assert any(line.startswith("keda_queue_threshold = ") for line in lines)
    assert "output tokens/s" in r.stdout and "openai-infqps-concurrency8-" in r.stdout
    assert "--max-num-seqs 8 " in r.stdout


def _sweep(folder: Path, model_id: str, input_len: int, output_len: int) -> Path:
    """A sweep whose knee is at 512 (throughput doubles up to it, then flat while latency quadruples)."""
    folder.mkdir()
    for c, tps, ttft, tpot in ((128, 1000.0, 100, 20), (256, 2000.0, 100, 20), (512, 4000.0, 100, 20),
                               (1024, 4010.0, 400, 80)):
        d = result_dict(c, tps, ttft, tpot, input_len=input_len, output_len=output_len)
        d["model_id"] = model_id
        (folder / f"c{c}.json").write_text(json.dumps(d))
    return folder


def test_a_recommendation_above_the_kv_cache_is_clamped(cli, plan_json, tmp_path):
    estimate = plan_json(*QWEN, "--max-model-len", "16384")
    sweep = _sweep(tmp_path / "long", estimate["served_model_name"], 12000, 4000)
    r = cli("plan", *QWEN, "--max-model-len", "16384", "--from-benchmark", str(sweep), "--json")
    assert r.exit_code == 0, r.stderr
    p = json.loads(r.stdout)
    m = p["measured"]
    blocks_per_request = -(-16000 // p["block_size"])
    assert m["recommended_max_num_seqs"] == 512 and m["clamped"]
    # the limit is that of the Plan it was checked on; the final Plan's cache holds at least as many
    assert m["max_num_seqs"] == m["kv_max_num_seqs"] <= p["kv_cache_blocks"] // blocks_per_request < 512
    assert p["max_num_seqs"] == m["max_num_seqs"]
    (why,) = [d["formula"] for d in p["derivations"] if d["key"] == "max_num_seqs"]
    assert why.startswith("measured: ") and f"clamped from 512 to {m['max_num_seqs']}: the KV cache holds" in why


def test_a_sweep_of_another_model_is_refused(cli, tmp_path):
    sweep = _sweep(tmp_path / "other", "meta-llama/Llama-3.1-8B-Instruct", 256, 128)
    one_line_error(cli("values", *QWEN, "--from-benchmark", str(sweep), "--out", str(tmp_path / "o")),
                    "--from-benchmark", "model_id 'meta-llama/Llama-3.1-8B-Instruct'",
                    "served_model_name 'Qwen/Qwen2.5-0.5B-Instruct'")
    assert not (tmp_path / "o").exists()


def test_the_sweep_may_name_the_served_model_name(cli, tmp_path):
    sweep = _sweep(tmp_path / "chat", "chat", 256, 128)
    r = cli("plan", *QWEN, "--served-model-name", "chat", "--from-benchmark", str(sweep), "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["measured"]["knee_concurrency"] == 512


def test_bad_results_name_the_flag(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    one_line_error(cli("explain", *QWEN, "--from-benchmark", str(bad)), "--from-benchmark", "bad.json: not JSON")
    one_line_error(cli("explain", *QWEN, "--from-benchmark", str(tmp_path / "missing")),
                    "--from-benchmark", "missing", "cannot read")
    one = tmp_path / "one"
    one.mkdir()
    (one / "c1.json").write_text(json.dumps(result_dict(1, 10.0)))
    one_line_error(cli("explain", *QWEN, "--from-benchmark", str(one)), "--from-benchmark",
                    "at least 2 concurrency levels")
    one_line_error(cli("plan", *QWEN, "--max-num-seqs", "16", "--from-benchmark", str(CPU_SWEEP)),
                    "--from-benchmark", "--max-num-seqs 16")


def _targeted_sweep(folder: Path, target: str | None) -> Path:
    """The fixture sweep's levels, each recording `target` as the chart's Job's --metadata does."""
    folder.mkdir()
    for src in CPU_SWEEP.glob("*.json"):
        d = json.loads(src.read_text())
        if target is not None:
            d["vllm_eks_target"], d["vllm_eks_base_url"] = target, "http://release.ns.svc:8000"
        (folder / src.name).write_text(json.dumps(d))
    return folder


def test_a_service_sweep_for_gateway_values_warns(cli, tmp_path):
    sweep = _targeted_sweep(tmp_path / "svc", "service")
    r = cli("values", *QWEN, "--from-benchmark", str(sweep), "--routing", "gateway", "--gateway", "gw",
            "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("vllm-eks: warning:")]
    assert "--from-benchmark" in line and "vllm_eks_target service" in line and "--routing gateway" in line
    assert "benchmark.baseUrl" in line


def test_no_warning_when_the_sweep_matches_or_cannot_tell(cli, tmp_path):
    route = _targeted_sweep(tmp_path / "route", "route")
    bare = _targeted_sweep(tmp_path / "bare", None)
    svc = _targeted_sweep(tmp_path / "svc", "service")
    for i, (sweep, routing) in enumerate(((route, ["--routing", "gateway", "--gateway", "gw"]),
                                          (bare, ["--routing", "gateway", "--gateway", "gw"]),
                                          (svc, []))):
        r = cli("values", *QWEN, "--from-benchmark", str(sweep), *routing, "--out", str(tmp_path / f"o{i}"))
        assert r.exit_code == 0 and "warning" not in r.stderr, r.stderr
    # plan has no --routing: nothing to compare against
    r = cli("plan", *QWEN, "--from-benchmark", str(svc), "--json")
    assert r.exit_code == 0 and "warning" not in r.stderr, r.stderr

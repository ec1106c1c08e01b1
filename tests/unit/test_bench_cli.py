"""`vllm-eks bench analyze` and `bench run` through click: output, and bad input as one line
naming the file or flag, exit 1, no traceback."""

import json
import os
import stat
import sys

import pytest

from tests.unit.bench_synthetic import CPU_SWEEP, result_dict, write_sweep
from tests.unit.cli_result import one_line_error


def test_analyze_report(cli):
    r = cli("bench", "analyze", str(CPU_SWEEP), "--price-per-hour", "50", "--slo-ttft-p99", "2", "--slo-tpot-p99", "0.15")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    for text in ("output tok/s", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms", "req/s",
                 "Knee: concurrency 8", "definition: knee: the smallest measured concurrency",
                 "SLO limit", "$ / 1M output", "$ / 1M total", "Recommended --max-num-seqs: 8",
                 "Recommended KEDA threshold"):
        assert text in out, text


def test_analyze_json_and_plots(cli, tmp_path):
    r = cli("bench", "analyze", str(CPU_SWEEP), "--price-per-hour", "50", "--plots", str(tmp_path / "p"), "--json")
    assert r.exit_code == 0, r.stderr
    a = json.loads(r.stdout)
    assert a["knee"]["concurrency"] == 8 and a["knee"]["found"]
    assert [lv["concurrency"] for lv in a["levels"]] == [1, 2, 4, 8, 16, 32]
    assert a["costs"][0]["usd_per_million_output_tokens"] == pytest.approx(50 / (a["levels"][3]["output_tokens_per_s"] * 3.6e-3))
    assert a["recommendation"]["max_num_seqs"] == 8
    assert a["slo"] is None and a["comparison"] == []
    assert sorted(os.path.basename(p) for p in a["plots"]) == ["latency.png", "throughput.png"]
    assert all(os.path.getsize(p) > 10_000 for p in a["plots"])


def test_analyze_with_plan(cli, plan_json, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge")))
    r = cli("bench", "analyze", str(CPU_SWEEP), "--plan", str(plan))
    assert r.exit_code == 0, r.stderr
    assert "vs measured: ratio = measured / estimate" in r.stdout and "decode step (TPOT p50)" in r.stdout
    assert "cost_per_hour_usd" in r.stdout


@pytest.mark.parametrize("case", ["missing_key", "not_json", "one_level", "null_concurrency"])
def test_analyze_bad_results(cli, tmp_path, case):
    good = write_sweep(tmp_path, [(1, 10.0), (2, 19.0)])
    bad = tmp_path / f"{case}.json"
    if case == "missing_key":
        d = result_dict(4, 30.0)
        del d["p99_tpot_ms"]
        bad.write_text(json.dumps(d))
        r = cli("bench", "analyze", *good, str(bad))
        one_line_error(r, str(bad), "'p99_tpot_ms'")
    elif case == "not_json":
        bad.write_text("Serving Benchmark Result\n")
        one_line_error(cli("bench", "analyze", *good, str(bad)), str(bad), "not JSON")
    elif case == "one_level":
        one_line_error(cli("bench", "analyze", good[0]), good[0], "at least 2 concurrency levels")
    else:
        bad.write_text(json.dumps({**result_dict(4, 30.0), "max_concurrency": None}))
        one_line_error(cli("bench", "analyze", *good, str(bad)), str(bad), "--max-concurrency")


def test_analyze_bad_flags(cli, tmp_path):
    one_line_error(cli("bench", "analyze"), "no result files given")
    one_line_error(cli("bench", "analyze", str(tmp_path / "missing.json")), "missing.json: no such file")
    one_line_error(cli("bench", "analyze", str(CPU_SWEEP), "--capacity-type", "spot"), "--price-per-hour")
    one_line_error(cli("bench", "analyze", str(CPU_SWEEP), "--slo-ttft-p99", "1"), "--slo-tpot-p99")
    one_line_error(cli("bench", "analyze", str(CPU_SWEEP), "--replicas", "0"), "--replicas")
    (tmp_path / "plan.json").write_text('{"model": "x"}')
    one_line_error(cli("bench", "analyze", str(CPU_SWEEP), "--plan", str(tmp_path / "plan.json")),
                    f"--plan {tmp_path / 'plan.json'}", "missing key")
    (tmp_path / "file").write_text("")
    one_line_error(cli("bench", "analyze", str(CPU_SWEEP), "--plots", str(tmp_path / "file" / "sub")), "--plots")


FAKE_VLLM = """#!{python}
# Stands in for `vllm bench serve --save-result`: writes a result shaped like vLLM's.
import json, sys
sys.path.insert(0, {root!r})
from tests.unit.bench_synthetic import result_dict
a = sys.argv[1:]
assert a[:2] == ["bench", "serve"], a
opt = lambda k: a[a.index(k) + 1]
c = int(opt("--max-concurrency"))
if c == {fail_at}:
    print("boom"); sys.exit(3)
d = result_dict(c, 100.0 * min(c, 4), 100.0 * c, 20.0)
d["num_prompts"] = int(opt("--num-prompts"))
assert "--save-result" in a and opt("--dataset-name") == "random" and opt("--random-input-len") == "64"
open(opt("--result-dir") + "/" + opt("--result-filename"), "w").write(json.dumps(d))
print("============ Serving Benchmark Result ============")
"""


def _fake_vllm(tmp_path, fail_at=-1):
    exe = tmp_path / "fake-vllm"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    exe.write_text(FAKE_VLLM.format(python=sys.executable, root=root, fail_at=fail_at))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_run_then_analyze(cli, tmp_path):
    out = tmp_path / "sweep"
    r = cli("bench", "run", "--url", "http://127.0.0.1:8000/", "--model", "m", "--concurrency", "8,1,2,4,8",
            "--input-len", "64", "--out", str(out), "--vllm", str(_fake_vllm(tmp_path)))
    assert r.exit_code == 0, r.stderr
    assert [os.path.basename(p) for p in r.stdout.split()] == [f"concurrency-000{c}.json" for c in (1, 2, 4, 8)]
    assert json.loads((out / "concurrency-0008.json").read_text())["num_prompts"] == 40   # max(20, 5 x 8)
    log = (out / "concurrency-0001.log").read_text()
    assert "--base-url http://127.0.0.1:8000 " in log and "--max-concurrency 1 " in log
    a = json.loads(cli("bench", "analyze", str(out), "--json").stdout)
    assert a["knee"]["concurrency"] == 4


def test_run_errors(cli, tmp_path, monkeypatch):
    base = ["bench", "run", "--url", "http://x:8000", "--model", "m", "--out", str(tmp_path / "o")]
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    one_line_error(cli(*base), "no `vllm` executable on PATH", "--vllm")
    one_line_error(cli(*base, "--vllm", str(tmp_path / "nope")), "--vllm", "nope")
    one_line_error(cli(*base, "--vllm", str(_fake_vllm(tmp_path)) + "\n--help"), "--vllm", "control character '\\n'")
    one_line_error(cli(*base, "--vllm", str(_fake_vllm(tmp_path)), "--concurrency", "1,x"), "--concurrency '1,x'")
    one_line_error(cli(*base, "--vllm", str(_fake_vllm(tmp_path)), "--concurrency", "0"), "--concurrency")
    one_line_error(cli(*base, "--vllm", str(_fake_vllm(tmp_path)), "--dataset", str(tmp_path / "d.jsonl")),
                    "--dataset", "d.jsonl")
    r = cli(*base, "--input-len", "64", "--vllm", str(_fake_vllm(tmp_path, fail_at=2)))
    assert r.exit_code == 1 and "Traceback" not in r.stderr
    last = r.stderr.strip().splitlines()[-1]   # after the progress bar (transient on a terminal)
    assert last.startswith("vllm-eks: error: vllm bench serve at concurrency 2 exited 3") and "concurrency-0002.log" in last
    assert (tmp_path / "o" / "concurrency-0001.json").is_file()

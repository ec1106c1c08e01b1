"""The chart's benchmark sweep on the real vLLM server: the rendered benchmark Job's own script
(benchmark.enabled, 4 concurrency levels, a small request shape) runs `vllm bench serve` from
the engine venv against the single-node scenario's server, its VLLM_EKS_BENCH_RESULT lines and
result files are collected, and `vllm-eks bench analyze --plots` (the real CLI) reads them: one
table row per level, PNG plots with data lines in them.

It serves METRICS_SCENARIO like test_metrics and test_drain (same server key), so in a
full engine run the pooled server is reused and not restarted; the script's `vllm` is the engine
venv shim (engine_env.vllm_shim) first on PATH."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from tests.engine import scenarios as sc
from tests.engine.engine_env import vllm_shim
from tests.engine.report import REPORT
from tests.engine.serving import METRICS_SCENARIO, HelmTestRun, prepare, run_container, server_key
from vllm_eks.bench.plots import LATENCY_PNG, THROUGHPUT_PNG
from vllm_eks.bench.runner import result_name

LEVELS = [1, 2, 4, 8]
PROMPTS = 8
PREFIX = "VLLM_EKS_BENCH_RESULT "
C0 = np.array([0x1F, 0x77, 0xB4]) / 255  # matplotlib's first line colour


@pytest.fixture(scope="module")
def sweep(rendered_scenarios, tiny_models, server_pool, tmp_path_factory) -> tuple[HelmTestRun, Path, Path]:
    base = prepare(METRICS_SCENARIO, rendered_scenarios[METRICS_SCENARIO], tiny_models)
    objects = sc.render_chart(sc.CHART_VLLM, sc.VALUES / METRICS_SCENARIO / "vllm-inference.yaml", set_values={
        "benchmark": {"enabled": True, "concurrencies": LEVELS, "tokenizer": base.tiny_path,
                      "requestShape": {"inputLen": 32, "outputLen": 16, "numPrompts": PROMPTS}}})
    run = prepare(METRICS_SCENARIO, objects, tiny_models)
    assert server_key(run) == server_key(base), "the benchmark values changed the server's command"
    run.server = server_pool.get(server_key(run), f"scenario-{METRICS_SCENARIO}", run.sub.args, run.sub.env,
                                 port=int(sc.flag_value(run.sub.args, "--port")))
    job = next(o for o in objects if o["kind"] == "Job" and o["metadata"]["name"].endswith("-benchmark"))
    spec = job["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    work = tmp_path_factory.mktemp("bench")
    # the pod's volumes as local folders; /tmp stays this machine's /tmp (the tiny model's path is
    # under it, and it is writable here as the emptyDir is there)
    mounts = {m["mountPath"]: work / m["name"] for m in container["volumeMounts"] if m["mountPath"] != "/tmp"}
    for local in mounts.values():
        local.mkdir()
    shim_dir = vllm_shim(work / "bin").parent
    t0 = time.monotonic()
    result = run_container(objects, job["metadata"]["name"], container, run.server.base_url, work,
                           mounts=mounts, extra_env={"PATH": f"{shim_dir}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
                           timeout=900)
    REPORT.note(f"benchmark Job script: {len(LEVELS)} levels x {PROMPTS} requests in {time.monotonic() - t0:.0f} s")
    assert result.returncode == 0, f"the benchmark script exited {result.returncode}:\n{result.output[-6000:]}"
    # what a user does with the pod log: one file per VLLM_EKS_BENCH_RESULT line
    from_log = work / "from-log"
    from_log.mkdir()
    for line in result.output.splitlines():
        if line.startswith(PREFIX):
            data = json.loads(line[len(PREFIX):])
            (from_log / result_name(int(data["max_concurrency"]))).write_text(json.dumps(data))
    return result, mounts["/work"] / "results", from_log


def test_every_level_printed_and_saved(sweep) -> None:
    result, saved, from_log = sweep
    lines = [ln for ln in result.output.splitlines() if ln.startswith(PREFIX)]
    assert len(lines) == len(LEVELS), result.output[-3000:]
    assert sorted(p.name for p in saved.glob("*.json")) == [result_name(c) for c in LEVELS]
    assert sorted(p.name for p in from_log.glob("*.json")) == [result_name(c) for c in LEVELS]
    for c in LEVELS:
        printed = json.loads((from_log / result_name(c)).read_text())
        assert printed == json.loads((saved / result_name(c)).read_text())
        assert printed["max_concurrency"] == c and printed["completed"] == PROMPTS and printed["failed"] == 0
        assert printed["output_throughput"] > 0
        # what the sweep measured through, recorded by vllm bench serve --metadata
        assert printed["vllm_eks_target"] == "service" and printed["vllm_eks_base_url"].startswith("http://")


def _analyze(*args: str) -> subprocess.CompletedProcess[str]:
    cli = Path(sys.executable).parent / "vllm-eks"
    return subprocess.run([str(cli), "bench", "analyze", *args], capture_output=True, text=True, timeout=120)


def test_bench_analyze_reads_the_sweep_and_plots_it(sweep, tmp_path) -> None:
    _, _, from_log = sweep
    plots = tmp_path / "plots"
    proc = _analyze(str(from_log), "--plots", str(plots), "--json")
    assert proc.returncode == 0, proc.stderr
    a = json.loads(proc.stdout)
    assert [lv["concurrency"] for lv in a["levels"]] == LEVELS
    assert all(lv["output_tokens_per_s"] > 0 and lv["completed"] == PROMPTS for lv in a["levels"])
    REPORT.note("benchmark sweep (tiny model, CPU): " + ", ".join(
        f"c={lv['concurrency']}: {lv['output_tokens_per_s']:.1f} output tok/s, {lv['requests_per_s']:.2f} req/s"
        for lv in a["levels"]) + f"; knee {a['knee']['concurrency']}")
    assert sorted(Path(p).name for p in a["plots"]) == sorted([THROUGHPUT_PNG, LATENCY_PNG])
    for name in (THROUGHPUT_PNG, LATENCY_PNG):
        png = plots / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
        img = image.imread(png)
        assert img[..., :3].std() > 0.05  # not a blank canvas
        line = np.argwhere(np.abs(img[..., :3] - C0).max(axis=-1) < 0.02)
        assert len(line) > 100, f"{name}: no data line drawn"
        assert line[:, 1].max() - line[:, 1].min() > img.shape[1] * 0.3, f"{name}: the data line spans no levels"
    table = _analyze(str(from_log))
    assert table.returncode == 0, table.stderr
    rows = [ln for ln in table.stdout.splitlines() if ln.strip()[:1] in "│┃|" or ln.strip()[:1].isdigit()]
    for c in LEVELS:
        assert any(ln.replace("│", " ").split()[:1] == [str(c)] for ln in rows), (c, table.stdout)

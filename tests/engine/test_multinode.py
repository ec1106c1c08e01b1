"""Multi-node scenarios (LeaderWorkerSet) served for real: the rendered leader and worker
commands run as two processes with LWS's environment (tests/engine/multinode.py lists every
change), the leader answers a completion through the pipeline split across both, and the chart's
failure handling is measured: kill the worker's engine process and watch the worker's main
process (the container) and the leader's probes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.engine import scenarios as sc
from tests.engine.cpu import tiny_model_for
from tests.engine.multinode import Group, prepare_group
from tests.engine.report import REPORT
from tests.engine.server import SIZING_LINE, STARTUP_TIMEOUT_S
from tests.engine.server import http_text as _get


def _multi_node_plans() -> dict[str, str]:
    """scenario -> catalog model, for every committed multi-node scenario."""
    out = {}
    for d in sc.scenario_dirs():
        plan = json.loads((d / "plan.json").read_text())
        if plan["topology"] == "multi-node":
            out[d.name] = plan["model"]
    return out


def _has_stand_in(model: str) -> bool:
    try:
        tiny_model_for(model)
        return True
    except KeyError:
        return False


def _multi_node_scenarios() -> list[str]:
    """Scenarios whose architecture has a tiny stand-in: all of them (the test below fails
    otherwise)."""
    return [name for name, model in _multi_node_plans().items() if _has_stand_in(model)]


def test_every_multi_node_scenario_has_a_stand_in() -> None:
    plans = _multi_node_plans()
    assert plans, "no multi-node scenario: the LeaderWorkerSet commands would go untested"
    run = _multi_node_scenarios()
    missing = sorted(set(plans) - set(run))
    REPORT.note("multi-node scenarios run as processes: " + ", ".join(run))
    assert not missing, (f"multi-node scenarios without a tiny stand-in of their architecture: {missing} "
                         "(add one to tests/engine/scripts/write_tiny_models.py and TINY_FOR_ARCHITECTURE)")


def _kv_bytes_per_token_and_layer(config: dict) -> int:
    """What one attention layer of the stand-in caches per token, in its bf16/fp16 dtype: the MLA
    latent (kv_lora_rank + qk_rope_head_dim) or K and V of every KV head."""
    assert config.get("dtype", config.get("torch_dtype")) in ("bfloat16", "float16"), config
    if config.get("kv_lora_rank"):
        return (config["kv_lora_rank"] + config["qk_rope_head_dim"]) * 2
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return 2 * config["num_key_value_heads"] * head_dim * 2


def _kv_tokens(budget_bytes: int, per_layer: int, layers: int, block: int, max_len: int) -> int:
    """The engine's sizing line for full-attention layers (tests/engine/README.md, Sizing):
    num_blocks = budget // page // layers, N = int(num_blocks / cdiv(L, block) * L)."""
    num_blocks = budget_bytes // (block * per_layer) // layers
    return int(num_blocks / -(-max_len // block) * max_len)


def _probe(group: Group, timeout: float = 40) -> tuple[int, str]:
    p = subprocess.run(group.liveness_argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, (p.stderr or p.stdout).strip()


@pytest.fixture(scope="module", params=_multi_node_scenarios())
def group(request, rendered_scenarios, tiny_models, engine_workdir, server_pool):
    server_pool.stop_current()  # two more engines on two shared cores: nothing else runs
    g = prepare_group(request.param, rendered_scenarios[request.param], tiny_models,
                      engine_workdir / "multinode" / request.param)
    try:
        g.leader.start()
        g.worker.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            for p in (g.leader, g.worker):
                assert p.alive(), f"{p.role} exited with {p.proc.returncode}:\n{p.log_text()[-4000:]}"
            try:
                if _get(f"http://127.0.0.1:{g.port}/health", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"not healthy in {STARTUP_TIMEOUT_S:.0f} s:\n{g.leader.log_text()[-4000:]}"
            time.sleep(0.5)
        secs = time.monotonic() - g.leader.started_at
        REPORT.server(f"multi-node {request.param} (leader + headless worker)", secs)
        REPORT.note(f"multi-node {request.param}: changes to the rendered commands: " + "; ".join(g.changes))
        yield g
    finally:
        g.stop()


def test_leader_and_worker_run_the_rendered_launcher(group: Group) -> None:
    lead, work = group.leader.argv, group.worker.argv
    assert lead[:2] == work[:2] == ["/bin/sh", "-ec"] and "exec 'vllm' 'serve' \"$@\"" in lead[2]
    la, wa = lead[4:], work[4:]
    assert sc.flag_value(la, "--node-rank") == "0" and "--headless" not in la
    assert sc.flag_value(wa, "--node-rank") == "1" and "--headless" in wa
    for a in (la, wa):
        assert sc.flag_value(a, "--nnodes") == "2" and sc.flag_value(a, "--master-addr") == "127.0.0.1"
        assert sc.flag_value(a, "--pipeline-parallel-size") == "2"
    # each process passed its image contract (engine venv: `vllm` and the vllm module) and ran vLLM
    for p in (group.leader, group.worker):
        assert "image contract (multi-node): ok" in p.log_text(), p.log_text()[:2000]
    assert "headless multiproc executor" in group.worker.log_text()


def test_completion_through_the_leader_uses_both_stages(group: Group) -> None:
    status, body = _get(f"http://127.0.0.1:{group.port}/v1/completions", {
        "model": group.served_model_name, "prompt": "The capital of France is", "max_tokens": 8,
        "temperature": 0})
    assert status == 200, body
    out = json.loads(body)
    assert out["usage"]["completion_tokens"] >= 1, out
    procs = {p.role: p.descendants() for p in (group.leader, group.worker)}
    ranks = {p.role: sorted(set(re.findall(r"PP rank (\d+)", p.log_text()))) for p in (group.leader, group.worker)}
    REPORT.note(f"multi-node {group.scenario}: processes: " + "; ".join(
        f"{role} {len(ps)} ({', '.join(c.split()[1].rsplit('/', 1)[-1] if c.startswith('/') and len(c.split()) > 1 else c.split()[0].rsplit('/', 1)[-1] for _, c in ps)})"
        for role, ps in procs.items()) + f"; PP ranks logged: {ranks}")
    assert len(procs["worker"]) >= 2, "the headless worker runs its engine worker in a child process"
    assert ranks == {"leader": ["0"], "worker": ["1"]}, ranks
    # the layers were split: the KV cache the engine sized holds one of the stand-in's two layers
    # per stage (a stage holding both would fit half as many tokens in the same budget)
    la = group.leader.argv[4:]
    config = json.loads((Path(la[0]) / "config.json").read_text())
    assert config["num_hidden_layers"] == 2, config
    sizing = SIZING_LINE.search(group.leader.log_text())
    assert sizing, "the leader logged no KV cache size"
    block, max_len = int(sc.flag_value(la, "--block-size")), int(sizing["len"].replace(",", ""))
    per_layer = _kv_bytes_per_token_and_layer(config)
    budget = int(group.leader.env["VLLM_CPU_KVCACHE_SPACE"]) * 2**30
    logged = int(sizing["tokens"].replace(",", ""))
    assert logged == _kv_tokens(budget, per_layer, 1, block, max_len) != _kv_tokens(
        budget, per_layer, 2, block, max_len), (sizing.group(0), per_layer, block)
    split = f"KV: {sizing.group(0)} (one layer of {per_layer} B/token per stage, block {block})"
    if config.get("n_routed_experts"):
        # DeepSeek layout: dense layers first (first_k_dense_replace), then MoE layers. vLLM's
        # DeepSeek model logs when the layers a stage builds hold no MoE block: the leader's stage
        # (the dense layer) must log it, the worker's stage (the MoE layer) must not.
        assert config["first_k_dense_replace"] == 1, config
        no_moe = "No DeepseekV2MoE layer found in model.layers"
        assert no_moe in group.leader.log_text() and no_moe not in group.worker.log_text()
        for p in (group.leader, group.worker):
            assert re.search(r"Using (CPU|AMX)_MLA backend", p.log_text()), p.role
        split += ("; leader stage: layer 0 (MLA + dense MLP); worker stage: layer 1 "
                  f"(MLA + {config['n_routed_experts']} routed experts + {config['n_shared_experts']} shared)")
    REPORT.note(f"multi-node {group.scenario}: split: {split}")
    # the liveness probe the chart renders passes on a healthy group
    code, line = _probe(group)
    assert code == 0, line


def test_lost_worker_engine_stops_the_worker_and_fails_the_leader_liveness(group: Group) -> None:
    """Kill the worker pod's engine process (what a GPU fault or OOM kill does): the worker's main
    process must exit (its container ends: LWS recreates the group), and the leader's liveness
    probe must fail (its container restarts: LWS recreates the group), while /health may not."""
    main_pid = group.worker.proc.pid
    engine_pids = [pid for pid, _ in group.worker.descendants() if pid != main_pid]
    assert engine_pids, "no engine process below the headless worker"
    t0 = time.monotonic()
    for pid in engine_pids:
        try:
            import os
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    worker_exit = None
    timeline: list[str] = []
    probe_failed_at = None
    deadline = t0 + 150
    while time.monotonic() < deadline and (probe_failed_at is None or worker_exit is None):
        now = time.monotonic() - t0
        if worker_exit is None and not group.worker.alive():
            worker_exit = (now, group.worker.proc.returncode)
            timeline.append(f"{now:.1f}s worker main process exited ({group.worker.proc.returncode})")
        try:
            health = _get(f"http://127.0.0.1:{group.port}/health", timeout=5)[0]
        except OSError as exc:
            health = f"no answer ({exc.__class__.__name__})"
        code, line = (None, "")
        if probe_failed_at is None:
            code, line = _probe(group)
            if code != 0:
                probe_failed_at = time.monotonic() - t0
        timeline.append(f"{now:.1f}s /health {health}; liveness "
                        f"{'-' if code is None else ('ok' if code == 0 else 'FAIL: ' + line[:160])}; "
                        f"leader {'alive' if group.leader.alive() else 'exited'}")
        time.sleep(2)
    health_after = _get(f"http://127.0.0.1:{group.port}/health", timeout=5)[0] if group.leader.alive() else "leader exited"
    timeline.append(f"/health after the failed probe: {health_after}")
    REPORT.note(f"multi-node {group.scenario}: worker engine killed at 0 s: " + " | ".join(timeline))
    assert worker_exit is not None, "the headless worker kept running without its engine:\n" + "\n".join(timeline)
    assert probe_failed_at is not None, "the leader's liveness never failed:\n" + "\n".join(timeline)

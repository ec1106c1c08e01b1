"""The rendered probes of the served scenario against the real CPU engine, run as the kubelet
runs them (tests/engine/kubelet_probe.py): a server saturated by the load generator (requests
waiting behind a full batch) stays Ready and Live; a server whose EngineCore process is stopped
(SIGSTOP) fails liveness within the documented bound (docs/topologies.md, "Probes"), idle or with
requests queued, while /health still answers 200 (why liveness cannot be /health).
Shares the served scenario's server with test_metrics and test_drain: the engine core is
continued (SIGCONT) afterwards and must serve again."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from tests.engine import scenarios as sc
from tests.engine.kubelet_probe import Prober, run_once
from tests.engine.load import PREFIX, LoadResult
from tests.engine.report import REPORT
from tests.engine.server import VllmServer
from tests.engine.serving import METRICS_SCENARIO, prepare, server_key

QUEUE_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def _gauges(srv: VllmServer) -> dict[str, float]:
    status, text = srv.request("GET", "/metrics", timeout=10)
    assert status == 200, status
    text = text if isinstance(text, str) else str(text)
    sums = dict.fromkeys(QUEUE_GAUGES, 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return sums


def detection_bound(probe: dict[str, Any]) -> int:
    """The documented worst case from the engine hanging to the kubelet restarting it."""
    period, threshold, timeout = (int(probe[k]) for k in ("periodSeconds", "failureThreshold", "timeoutSeconds"))
    # the first failing check starts within a period of the hang; the kubelet starts the next one
    # a period after the last started, or when it ended if it ran longer
    return period + (threshold - 1) * max(period, timeout) + timeout


def _engine_core_pid(srv: VllmServer) -> int:
    """The EngineCore process: a descendant of the API server titled VLLM::EngineCore."""
    assert srv.proc is not None
    todo, seen = [srv.proc.pid], []
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            todo += [int(c) for c in task.read_text().split()]
        seen.append(pid)
    cores = [p for p in seen if "EngineCore" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]
    assert len(cores) == 1, f"EngineCore processes under {srv.proc.pid}: {cores} of {seen}"
    return cores[0]


class SustainedLoad:
    """`concurrency` clients sending the load generator's completions back to back until stopped."""

    def __init__(self, srv: VllmServer, model: str, concurrency: int) -> None:
        self.srv, self.model, self.result = srv, model, LoadResult()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(concurrency)]

    def _client(self, i: int) -> None:
        n = 0
        while not self._stop.is_set():
            try:
                status, body = self.srv.request("POST", "/v1/completions", {
                    "model": self.model, "prompt": PREFIX + f" item {i}-{n}", "max_tokens": 48,
                    "ignore_eos": True}, timeout=300)
                self.result.record(status, "" if status == 200 else str(body)[:300])
            except OSError as err:
                self.result.record(0, repr(err))
            n += 1

    def __enter__(self) -> SustainedLoad:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=600)


def _wait_queue(srv: VllmServer, pred, timeout: float) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while True:
        g = _gauges(srv)
        if pred(g) or time.monotonic() > deadline:
            return g
        time.sleep(0.5)


def _stopped_engine_detection(srv: VllmServer, live: dict[str, Any],
                              env: dict[str, str]) -> tuple[float | None, list[str], Prober]:
    """SIGSTOP the engine core, run liveness until it fails (or the bound passes), SIGCONT.
    Returns (seconds to failureThreshold failures, /health statuses while stopped, the prober)."""
    core = _engine_core_pid(srv)
    bound = detection_bound(live)
    health: list[str] = []
    os.kill(core, signal.SIGSTOP)
    t_stop = time.monotonic()
    try:
        prober = Prober(live, srv.port, env).start()
        while prober.failed_at is None and time.monotonic() < t_stop + bound + 5:
            status, _ = srv.request("GET", "/health", timeout=5)
            health.append(str(status))
            time.sleep(2)
        prober.stop()
    finally:
        os.kill(core, signal.SIGCONT)
    return (None if prober.failed_at is None else prober.failed_at - t_stop), health, prober


def test_probes_saturated_and_hung_engine(rendered_scenarios, tiny_models, server_pool) -> None:
    run = prepare(METRICS_SCENARIO, rendered_scenarios[METRICS_SCENARIO], tiny_models)
    srv = server_pool.get(server_key(run), f"scenario-{METRICS_SCENARIO}", run.sub.args, run.sub.env,
                          port=int(sc.flag_value(run.sub.args, "--port")))
    container = next(c for c in run.invocation.pod_spec["containers"] if sc.container_serve_args(c) is not None)
    ready, live = container["readinessProbe"], container["livenessProbe"]
    assert "exec" in live, f"liveness is not the engine-progress check: {live}"
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    model = run.served_model_name
    seqs = int(sc.flag_value(run.sub.args, "--max-num-seqs") or 256)
    # the idle check passes first (the one-token path)
    first = run_once(live, srv.port, env)
    assert first.ok, first

    # (a) saturated: more clients than --max-num-seqs, so requests wait behind a full batch, for
    # longer than liveness and readiness need to fail.
    window = max(detection_bound(live), detection_bound(ready)) + 5
    peak_waiting = 0.0
    with SustainedLoad(srv, model, seqs + 16) as load:
        _wait_queue(srv, lambda g: g["vllm:num_requests_waiting"] > 0, 120)
        probers = [Prober(ready, srv.port, env).start(), Prober(live, srv.port, env).start()]
        end = time.monotonic() + window
        while time.monotonic() < end:
            peak_waiting = max(peak_waiting, _gauges(srv)["vllm:num_requests_waiting"])
            time.sleep(2)
        for p in probers:
            p.stop()
    rp, lp = probers
    REPORT.note(f"probes under saturation ({seqs + 16} clients, --max-num-seqs {seqs}, up to "
                f"{peak_waiting:g} waiting, {load.result.ok} of {load.result.sent} requests ok): readiness "
                f"{len(rp.attempts)} runs, slowest {max(a.seconds for a in rp.attempts):.2f} s; liveness "
                f"{len(lp.attempts)} runs, slowest {max(a.seconds for a in lp.attempts):.2f} s")
    assert peak_waiting > 0, "the load never queued a request: not saturated"
    assert rp.attempts and not rp.failures(), f"readiness failed under saturation: {rp.failures()}"
    assert lp.attempts and not lp.failures(), f"liveness failed under saturation: {lp.failures()}"

    # (b) hung engine core, idle and with requests queued
    _wait_queue(srv, lambda g: sum(g.values()) == 0, 120)
    idle_s, idle_health, idle_p = _stopped_engine_detection(srv, live, env)
    with SustainedLoad(srv, model, 8):
        _wait_queue(srv, lambda g: g["vllm:num_requests_running"] > 0, 60)
        busy_s, busy_health, busy_p = _stopped_engine_detection(srv, live, env)
    bound = detection_bound(live)
    REPORT.note(f"SIGSTOP of EngineCore: liveness failed {live['failureThreshold']}x after "
                f"{idle_s} s idle, {busy_s} s busy (bound {bound} s); /health meanwhile: "
                f"{sorted(set(idle_health + busy_health))}; last failure: {(busy_p.failures() or [None])[-1]}")
    for name, secs, health, prober in (("idle", idle_s, idle_health, idle_p), ("busy", busy_s, busy_health, busy_p)):
        assert secs is not None and secs <= bound, (
            f"{name}: liveness did not fail within {bound} s of SIGSTOP: {prober.attempts}")
        assert health and set(health) == {"200"}, f"{name}: /health while the engine core was stopped: {health}"

    # continued, the engine serves again (test_drain takes the server over next)
    status, body = srv.request("POST", "/v1/completions", {"model": model, "prompt": "hello", "max_tokens": 4},
                               timeout=120)
    if status != 200:
        server_pool.forget(srv)
        srv.stop()
    assert status == 200, body
    assert run_once(live, srv.port, env).ok

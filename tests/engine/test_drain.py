"""Drain for real, on the served scenario, with the chart's own timings: Kubernetes runs the
preStop hook (a sleep) when the pod is deleted, then sends SIGTERM, and kills the container
at terminationGracePeriodSeconds counted from the deletion. Requests in flight at SIGTERM must
finish within vLLM's --shutdown-timeout, new ones must be refused, and the process must exit
before the grace period ends. Runs last: it stops the server."""

from __future__ import annotations

import signal
import threading
import time
import urllib.error
from dataclasses import dataclass
from typing import Any

from tests.engine import scenarios as sc
from tests.engine.report import REPORT
from tests.engine.serving import METRICS_SCENARIO, prepare, server_key

# How long the requests should still run after SIGTERM by the calibrated rate; the decode rate
# on shared cores varies by several times between minutes, so the in-flight requests get
# lengths spread by LENGTH_FACTORS: the drain needs at least one of them across SIGTERM, and
# every one must finish in full.
TARGET_AFTER_SIGTERM_S = 8.0
LENGTH_FACTORS = (1.0, 1.5, 2.0)
IN_FLIGHT = len(LENGTH_FACTORS)
CAL_TOKENS = 1024
# Long requests start this long before SIGTERM (while the preStop sleep runs, as traffic does
# until the endpoint removal has reached every proxy).
START_BEFORE_SIGTERM_S = 3.0


def prestop_seconds(container: dict[str, Any]) -> int:
    hook = (container.get("lifecycle") or {}).get("preStop") or {}
    if "sleep" in hook:
        return int(hook["sleep"]["seconds"])
    cmd = (hook.get("exec") or {}).get("command") or []
    words = " ".join(cmd).replace(";", " ").split()
    if "sleep" in words:
        return int(float(words[words.index("sleep") + 1]))
    raise AssertionError(f"container {container['name']}: no preStop sleep to honour: {hook}")


@dataclass
class Flight:
    started: float
    finished: float = 0.0
    status: int = 0
    tokens: int = 0
    error: str = ""


def _long_request(server, model: str, max_tokens: int, flight: Flight) -> None:
    try:
        status, body = server.request("POST", "/v1/completions", {
            "model": model, "prompt": "Once upon a time", "max_tokens": max_tokens,
            "ignore_eos": True, "temperature": 0}, timeout=300)
        flight.status = status
        if status == 200:
            flight.tokens = body["usage"]["completion_tokens"]
        else:
            flight.error = str(body)[:300]
    except OSError as err:
        flight.error = repr(err)
    flight.finished = time.monotonic()


def _new_request(server, model: str) -> tuple[bool, str]:
    """(refused?, what happened) for a fresh request after SIGTERM."""
    try:
        status, body = server.request("POST", "/v1/completions", {
            "model": model, "prompt": "hello", "max_tokens": 4}, timeout=30)
    except (urllib.error.URLError, ConnectionError, OSError) as err:
        return True, f"connection failed: {err!r}"
    return status != 200, f"HTTP {status}: {str(body)[:200]}"


def test_drain_on_sigterm_after_prestop(rendered_scenarios, tiny_models, server_pool) -> None:
    run = prepare(METRICS_SCENARIO, rendered_scenarios[METRICS_SCENARIO], tiny_models)
    srv = server_pool.get(server_key(run), f"scenario-{METRICS_SCENARIO}", run.sub.args, run.sub.env,
                          port=int(sc.flag_value(run.sub.args, "--port")))
    server_pool.forget(srv)  # this test ends the server's life
    pod = run.invocation.pod_spec
    container = next(c for c in pod["containers"] if sc.container_serve_args(c) is not None)
    prestop = prestop_seconds(container)
    grace = int(pod.get("terminationGracePeriodSeconds", 30))
    shutdown_timeout = int(sc.flag_value(run.sub.args, "--shutdown-timeout") or 0)
    assert shutdown_timeout > 0, "--shutdown-timeout not rendered: vLLM would abort in-flight requests"
    assert prestop + shutdown_timeout < grace, (prestop, shutdown_timeout, grace)
    assert TARGET_AFTER_SIGTERM_S * max(LENGTH_FACTORS) * 2 < shutdown_timeout, \
        "--shutdown-timeout too short for this test's margin"
    model = run.served_model_name
    max_len = int(sc.flag_value(run.sub.args, "--max-model-len"))

    # Calibrate with the same shape of load: IN_FLIGHT requests of CAL_TOKENS together. The
    # decode rate falls as contexts grow and varies with the machine's load, hence one long
    # calibration batch and a wide margin of TARGET_AFTER_SIGTERM_S against --shutdown-timeout.
    cal_tokens = min(CAL_TOKENS, max_len - 16)
    probes = [Flight(time.monotonic()) for _ in range(IN_FLIGHT)]
    threads = [threading.Thread(target=_long_request, args=(srv, model, cal_tokens, f)) for f in probes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert all(f.status == 200 for f in probes), probes
    batch_s = max(f.finished for f in probes) - min(f.started for f in probes)
    rate = cal_tokens / batch_s
    run_for = START_BEFORE_SIGTERM_S + TARGET_AFTER_SIGTERM_S
    lengths = [max(64, min(int(rate * run_for * k), max_len - 16)) for k in LENGTH_FACTORS]

    # t0: the pod is deleted. preStop sleeps; the long requests arrive near its end.
    t0 = time.monotonic()
    time.sleep(max(0.0, prestop - START_BEFORE_SIGTERM_S))
    flights = [Flight(time.monotonic()) for _ in range(IN_FLIGHT)]
    threads = [threading.Thread(target=_long_request, args=(srv, model, n, f), daemon=True)
               for n, f in zip(lengths, flights)]
    for t in threads:
        t.start()
    time.sleep(max(0.0, t0 + prestop - time.monotonic()))
    t_term = time.monotonic()
    srv.signal(signal.SIGTERM)

    # New requests after SIGTERM are refused.
    time.sleep(0.5)
    refusals = [_new_request(srv, model) for _ in range(3)]

    for t in threads:
        t.join(timeout=shutdown_timeout + 10)
    code = srv.wait_exit(timeout=max(1.0, t0 + grace - time.monotonic()))
    t_exit = time.monotonic()
    if code is None:
        srv.stop(grace=1)
    in_flight = [f for f in flights if f.finished > t_term]
    REPORT.note(
        f"drain: preStop {prestop} s, then SIGTERM with {len(in_flight)} of {IN_FLIGHT} requests "
        f"({', '.join(map(str, lengths))} tokens) in flight; the last finished "
        f"{max(f.finished for f in flights) - t_term:.1f} s after SIGTERM (--shutdown-timeout "
        f"{shutdown_timeout} s); exit {code} at {t_exit - t0:.1f} s of {grace} s grace; "
        f"new requests: {refusals[0][1]}")

    assert in_flight, (f"every long request finished before SIGTERM: nothing was in flight "
                       f"(calibrated {rate:.0f} tok/s, lengths {lengths})")
    for n, f in zip(lengths, flights):
        assert f.status == 200 and f.tokens == n, f"in-flight request lost: {f} (wanted {n} tokens)"
        assert f.finished - t_term <= shutdown_timeout, f"finished after --shutdown-timeout: {f}"
    assert all(refused for refused, _ in refusals), f"new requests served after SIGTERM: {refusals}"
    assert code is not None, f"still running {grace} s after deletion (terminationGracePeriodSeconds)"
    assert t_exit - t0 <= grace
    assert code == 0, f"exit code {code}\n{srv.log_tail()}"

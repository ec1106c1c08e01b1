"""The liveness script files/probes/engine_alive.py against a stand-in vLLM API server whose
/metrics, /health and /v1/completions behave as a busy, idle or hung engine's do: a busy engine
whose token counters move passes without a completion being sent; a queue whose counters do
not move fails; an idle engine must produce a token; a completion stuck behind load that
arrived meanwhile passes when the counters moved."""

from __future__ import annotations

import contextlib
import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "charts" / "vllm-inference" / "files" / "probes" / "engine_alive.py"


@dataclass
class Engine:
    running: int = 0
    waiting: int = 0
    tokens_per_scrape: float = 0.0  # how far the counters move between two scrapes
    completion_delay_s: float = 0.0
    health: int = 200
    tokens: float = 1000.0
    completions: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def metrics(self) -> str:
        with self.lock:
            self.tokens += self.tokens_per_scrape
            t = self.tokens
        # two label sets of one counter: the script sums them
        return (f'# HELP vllm:num_requests_running x\nvllm:num_requests_running{{engine="0"}} {self.running}.0\n'
                f'vllm:num_requests_waiting{{engine="0"}} {self.waiting}.0\n'
                f'vllm:prompt_tokens_total{{engine="0"}} {t / 2}\nvllm:generation_tokens_total{{engine="0"}} {t / 2}\n'
                f'vllm:generation_tokens_created{{engine="0"}} 1.7e9\n')


@pytest.fixture
def engine() -> Iterator[tuple[Engine, int]]:
    state = Engine()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def _send(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/metrics":
                self._send(200, state.metrics())
            else:
                self._send(state.health, "")

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.completions += 1
            time.sleep(state.completion_delay_s)
            with contextlib.suppress(OSError):  # the probe may have given up
                self._send(200, json.dumps({"choices": [{"text": "x"}]}))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state, server.server_address[1]
    server.shutdown()


def probe(port: int, timeout: float = 3.0) -> tuple[int, str, float]:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(SCRIPT), "--port", str(port), "--model", "m", "--timeout", str(timeout)],
                       capture_output=True, text=True, timeout=timeout + 10)
    return p.returncode, p.stderr, time.monotonic() - t0


def test_busy_engine_making_progress_passes_without_a_completion(engine) -> None:
    state, port = engine
    state.running, state.waiting, state.tokens_per_scrape = 88, 16, 5
    state.completion_delay_s = 60  # a completion would wait behind the queue
    code, err, _ = probe(port)
    assert code == 0, err
    assert state.completions == 0


def test_queue_without_progress_fails_within_the_timeout(engine) -> None:
    state, port = engine
    state.running, state.waiting = 4, 0
    code, err, took = probe(port, timeout=3)
    assert code == 1 and "4 requests running or waiting and no token processed" in err, err
    assert took < 3 + 1.5


def test_idle_engine_answers_one_token(engine) -> None:
    state, port = engine
    code, err, _ = probe(port)
    assert code == 0, err
    assert state.completions == 1


def test_idle_engine_whose_completion_hangs_fails(engine) -> None:
    state, port = engine
    state.completion_delay_s = 30
    code, err, took = probe(port, timeout=3)
    assert code == 1 and "no token was processed" in err, err
    assert took < 3 + 1.5


def test_completion_held_by_load_that_arrived_meanwhile_passes(engine) -> None:
    state, port = engine
    state.completion_delay_s = 30
    state.tokens_per_scrape = 5  # the engine is busy with the new load and progressing
    code, err, _ = probe(port, timeout=3)
    assert code == 0, err


def test_exited_engine_core_fails_on_health(engine) -> None:
    state, port = engine
    state.health = 503
    code, err, _ = probe(port)
    assert code == 1 and "/health answered 503" in err, err

"""Liveness of a vLLM engine, asked from inside its container (the exec liveness probe of every
`vllm serve` container: single-node pods and multi-node leaders). Exit 0 when the engine is
making progress; otherwise print one line saying what failed and exit 1.

What counts as progress, all within --timeout seconds:
  1. /health answers 200 (vLLM 0.32 answers 503 once the engine core process has exited).
  2. Busy engine (vllm:num_requests_running + vllm:num_requests_waiting > 0 on /metrics): the
     token counters (vllm:prompt_tokens_total + vllm:generation_tokens_total) advance. A saturated
     engine passes at its next scheduler step, without adding a request to its queue.
  3. Idle engine: a one-token completion succeeds. Should load arrive meanwhile and hold that
     request in the queue until the deadline, the counters having advanced still counts.

Why not /health alone: vLLM 0.32's /health only reads the API server's `errored` flag, which is
set when the engine core process dies, not when it hangs: a stopped (SIGSTOP) or deadlocked
engine core, or a multi-node group that lost a headless worker, leaves /health at 200 while no
request completes. The counters live in the API server and move only on the engine core's
stats, so a hung core freezes them.
Standard library only: it runs with the serving image's python3.

Usage: python3 engine_alive.py --port 8000 --model NAME [--host 127.0.0.1] [--timeout 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

QUEUE_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
PROGRESS_COUNTERS = ("vllm:prompt_tokens_total", "vllm:generation_tokens_total")
POLL_SECONDS = 0.5


def _call(url: str, body: dict | None, timeout: float) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    # With an API key (the chart's apiKey: VLLM_API_KEY in this container) vLLM answers 401 to
    # /v1 requests that do not carry it.
    if os.environ.get("VLLM_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['VLLM_API_KEY']}"
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def sample_sums(text: str, names: tuple[str, ...]) -> dict[str, float]:
    """Sum of every sample of each named metric in a Prometheus text exposition (all label sets:
    one per engine, model or API server)."""
    sums = {name: 0.0 for name in names}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            try:
                sums[name] += float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue
    return sums


class Engine:
    def __init__(self, host: str, port: int, deadline: float) -> None:
        self.base = f"http://{host}:{port}"
        self.deadline = deadline

    def left(self) -> float:
        return max(0.5, self.deadline - time.monotonic())

    def metrics(self) -> tuple[float, float]:
        """(requests running or waiting, tokens processed so far)."""
        status, text = _call(self.base + "/metrics", None, self.left())
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        sums = sample_sums(text, QUEUE_GAUGES + PROGRESS_COUNTERS)
        return (sum(sums[n] for n in QUEUE_GAUGES), sum(sums[n] for n in PROGRESS_COUNTERS))

    def progressed_since(self, tokens: float) -> bool:
        """Poll until the token counters pass `tokens` or the deadline comes."""
        while True:
            if self.metrics()[1] > tokens:
                return True
            if time.monotonic() + POLL_SECONDS >= self.deadline:
                return False
            time.sleep(POLL_SECONDS)


def check(host: str, port: int, model: str, timeout: float) -> str | None:
    """None when alive, else one line saying why not."""
    engine = Engine(host, port, time.monotonic() + timeout)
    try:
        status, text = _call(engine.base + "/health", None, engine.left())
        if status != 200:
            return f"/health answered {status}: {text[:200]}"
        queued, tokens = engine.metrics()
        if queued > 0:
            if engine.progressed_since(tokens):
                return None
            return f"{queued:g} requests running or waiting and no token processed in {timeout:g} s"
        try:
            status, text = _call(engine.base + "/v1/completions",
                                 {"model": model, "prompt": "ping", "max_tokens": 1, "temperature": 0},
                                 engine.left())
        except OSError as exc:  # timed out: a queue may have formed behind it since
            if engine.progressed_since(tokens):
                return None
            return f"one-token completion did not finish within {timeout:g} s and no token was processed: {exc}"
    except (OSError, ValueError, RuntimeError) as exc:  # refused, reset, timed out, bad /metrics
        return f"engine did not answer within {timeout:g} s: {exc}"
    if status != 200:
        return f"one-token completion answered {status}: {' '.join(text.split())[:300]}"
    try:
        choices = json.loads(text).get("choices")
    except ValueError:
        choices = None
    if not choices:
        return f"one-token completion returned no choices: {text[:200]}"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--model", required=True, help="served model name")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds for the whole check")
    args = ap.parse_args(argv)
    why = check(args.host, args.port, args.model, args.timeout)
    if why:
        print(f"engine not alive: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

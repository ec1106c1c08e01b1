"""Liveness of a vLLM engine, asked from inside its container (exec probe of the multi-node
leader). Exit 0 when the server's /health answers 200 and a one-token completion succeeds;
otherwise print one line saying what failed and exit 1.

Why not /health alone: with vLLM's native multi-node launcher, the leader's /health kept
answering 200 after a headless worker died, until the next request failed (HTTP 500, "EngineCore
encountered an issue"); a request reaches every pipeline stage, so it sees a lost worker.
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


def check(host: str, port: int, model: str, timeout: float) -> str | None:
    """None when alive, else one line saying why not."""
    base = f"http://{host}:{port}"
    deadline = time.monotonic() + timeout
    try:
        status, text = _call(base + "/health", None, timeout)
        if status != 200:
            return f"/health answered {status}: {text[:200]}"
        left = max(1.0, deadline - time.monotonic())
        status, text = _call(base + "/v1/completions",
                             {"model": model, "prompt": "ping", "max_tokens": 1, "temperature": 0},
                             left)
    except (OSError, ValueError) as exc:  # refused, reset, timed out
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
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds for both calls together")
    args = ap.parse_args(argv)
    why = check(args.host, args.port, args.model, args.timeout)
    if why:
        print(f"engine not alive: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

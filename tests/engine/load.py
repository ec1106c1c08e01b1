"""A short, bounded request load against a server: a fixed number of requests from a few
threads, a mix of completions, chat completions and streaming, with a shared long prefix so
that prefix-cache hits happen, and one streaming request the client abandons (an abort)."""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .server import VllmServer

PREFIX = "Serving large language models needs memory for weights and for the KV cache. " * 24


@dataclass
class LoadResult:
    sent: int = 0
    ok: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, status: int, err: str = "") -> None:
        with self.lock:
            self.sent += 1
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if 200 <= status < 300:
                self.ok += 1
            elif err:
                self.errors.append(err)


def _one(server: VllmServer, model: str, i: int, result: LoadResult) -> None:
    if i % 3 == 0:
        status, body = server.request("POST", "/v1/chat/completions", {
            "model": model, "max_tokens": 32,
            "messages": [{"role": "user", "content": PREFIX + f" question {i}"}]}, timeout=120)
    else:
        status, body = server.request("POST", "/v1/completions", {
            "model": model, "prompt": PREFIX + f" item {i}", "max_tokens": 48,
            "ignore_eos": True}, timeout=120)
    result.record(status, "" if status == 200 else str(body)[:300])


def _abandoned_stream(server: VllmServer, model: str, result: LoadResult) -> None:
    """Read the first chunks of a long streaming completion, then hang up (vLLM aborts it)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions", body=json.dumps({
        "model": model, "prompt": "tell a long story", "max_tokens": 2000,
        "ignore_eos": True, "stream": True}), headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read(256)
    conn.close()
    result.record(resp.status)


def run_load(server: VllmServer, model: str, requests: int = 24, concurrency: int = 4) -> LoadResult:
    result = LoadResult()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(_one, server, model, i, result) for i in range(requests)]
        futures.append(pool.submit(_abandoned_stream, server, model, result))
        for f in futures:
            f.result()
    return result

"""Run vLLM's own `vllm serve` parser over many argument lists in one engine-venv process."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .engine_env import run_script


@dataclass(frozen=True)
class ParseResult:
    id: str
    ok: bool
    stage: str
    exit_code: int | None
    error: str


def parse_all(cases: dict[str, list[str]],
              local: dict[str, list[str]] | None = None) -> dict[str, ParseResult]:
    """id -> result. One process for all: importing vLLM costs seconds. `local[id]`, when
    given, is the same list with pod-only paths replaced (see cpu.local_paths)."""
    local = local or {}
    payload = json.dumps([{"id": k, "args": v, "local_args": local.get(k)} for k, v in cases.items()])
    proc = run_script("parse_serve_args.py", stdin=payload, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"parse_serve_args.py failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return {r["id"]: ParseResult(**r) for r in json.loads(proc.stdout)}

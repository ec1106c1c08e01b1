"""Looking at a rendered `vllm serve` argument list in tests, without reading it back into
settings: where a flag's value stands, and whether the Plan's rendered flags appear intact."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vllm_eks.spec.engine_settings import serve_flags
from vllm_eks.values.vllm_inference.engine import untyped_settings


def value_of(args: Sequence[str], flag: str) -> str | None:
    """The token after the last `flag` (argparse keeps the last), or None when it is absent."""
    hits = [i for i, a in enumerate(args) if a == flag]
    return args[hits[-1] + 1] if hits and hits[-1] + 1 < len(args) else None


def contains_run(args: Sequence[str], run: Sequence[str]) -> bool:
    """`run` appears in `args` as one contiguous, unchanged stretch."""
    n = len(run)
    return n == 0 or any(list(args[i:i + n]) == list(run) for i in range(len(args) - n + 1))


def typed_engine_flags(settings: Mapping[str, Any]) -> list[str]:
    """The flags the chart renders from the typed engine.* keys (engine.maxModelLen,
    engine.maxNumSeqs, engine.gpuMemoryUtilization), in the chart's order, for a Plan's settings."""
    order = ("max_model_len", "max_num_seqs", "gpu_memory_utilization")
    return serve_flags({k: settings[k] for k in order if k in settings})


def untyped_engine_flags(settings: Mapping[str, Any]) -> list[str]:
    """The Plan's other settings as flags: what engine.args holds, in the Plan's order."""
    return serve_flags(untyped_settings(settings))


def follows_parallel_flags(args: Sequence[str], run: Sequence[str]) -> bool:
    """`run` stands right after `--pipeline-parallel-size N` (the chart-owned parallel flags)."""
    i = list(args).index("--pipeline-parallel-size") + 2
    return list(args[i:i + len(run)]) == list(run)


def pairs(flags: Sequence[str]) -> dict[str, str]:
    """`[--a, 1, --b, 2]` -> `{--a: 1, --b: 2}` (flags that each take one value)."""
    return {flags[i]: flags[i + 1] for i in range(0, len(flags) - 1, 2)}

"""Looking at a rendered `vllm serve` argument list in tests, without reading it back into
settings: where a flag's value stands, and whether the Plan's rendered flags appear intact."""

from __future__ import annotations

from collections.abc import Sequence


def value_of(args: Sequence[str], flag: str) -> str | None:
    """The token after the last `flag` (argparse keeps the last), or None when it is absent."""
    hits = [i for i, a in enumerate(args) if a == flag]
    return args[hits[-1] + 1] if hits and hits[-1] + 1 < len(args) else None


def contains_run(args: Sequence[str], run: Sequence[str]) -> bool:
    """`run` appears in `args` as one contiguous, unchanged stretch."""
    n = len(run)
    return n == 0 or any(list(args[i:i + n]) == list(run) for i in range(len(args) - n + 1))

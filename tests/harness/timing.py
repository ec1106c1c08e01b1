"""Wall-clock timings that tests record and the session prints at the end (tests/conftest.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

TIMINGS: list[tuple[str, float]] = []


@contextmanager
def timed(label: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        TIMINGS.append((label, time.perf_counter() - start))

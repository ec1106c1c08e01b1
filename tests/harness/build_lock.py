"""One Python package build at a time in this checkout.

setuptools writes `build/` and `vllm_eks.egg-info/` into the source tree, and `make test` runs the
cluster tier (the README install test builds the wheel) beside the package tier (`make dist`):
two builds at once would read each other's half-written files."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator

from tests.harness.paths import ROOT

LOCK_FILE = ROOT / ".tools" / "locks" / "package-build.lock"


@contextlib.contextmanager
def source_tree_build() -> Iterator[None]:
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with LOCK_FILE.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

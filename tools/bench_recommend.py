"""Time `vllm-eks recommend` (instance_choice.recommend) for every catalog model at its defaults
(target: under 2 s each), the slowest as a whole command (a new process), and the slowest on a
catalog three times as large (every instance type under three names), as the catalog grows.
Prints the times; asserts nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from vllm_eks.catalog import instances as hardware
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog
from vllm_eks.planning import decisions
from vllm_eks.recommend import instance_choice

TARGET_S = 2.0


def timed(model: str) -> tuple[float, int]:
    start = time.perf_counter()
    r = instance_choice.recommend(model)
    return time.perf_counter() - start, len(r.choices)


def main() -> None:
    models = sorted(model_catalog())
    instance_choice.recommend(models[0])   # load the catalogs once
    times = {}
    for m in models:
        times[m], n = timed(m)
        print(f"recommend: {m:<38} {times[m]:.3f} s, {n} feasible layouts")
    slowest = max(times, key=lambda m: times[m])
    print(f"recommend: {len(models)} models x {len(instance_catalog())} instance types, slowest {slowest} "
          f"{times[slowest]:.3f} s, total {sum(times.values()):.3f} s (target < {TARGET_S:g} s each)")

    catalog = instance_catalog()
    bigger = {f"{name}{suffix}": replace(h, name=f"{name}{suffix}") for suffix in ("", "-b", "-c")
              for name, h in catalog.items()}
    # every module that looks the catalog up by name
    modules = (hardware, decisions, instance_choice)
    real = [m.instance_catalog for m in modules]
    for m in modules:
        m.instance_catalog = lambda: bigger   # type: ignore[assignment]
    try:
        took, n = timed(slowest)
    finally:
        for m, f in zip(modules, real):
            m.instance_catalog = f   # type: ignore[assignment]
    print(f"recommend: `vllm-eks recommend --model {slowest} --json` as a whole command (new process) "
          f"{whole_command(slowest):.3f} s (target < {TARGET_S:g} s)")
    print(f"recommend: {slowest} on a synthetic catalog of {len(bigger)} instance types {took:.3f} s, "
          f"{n} feasible layouts (target < {TARGET_S:g} s)")


def whole_command(model: str) -> float:
    """`vllm-eks recommend --model M --json` as a new process: imports and catalogs included."""
    exe = Path(sys.executable).with_name("vllm-eks")
    start = time.perf_counter()
    subprocess.run([str(exe), "recommend", "--model", model, "--json"], check=True, capture_output=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

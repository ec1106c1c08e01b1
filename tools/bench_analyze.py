"""Time `vllm-eks bench analyze` on a sweep of 20 concurrency levels (target: under 1 s), with
and without --plan and --plots: in-process (the analysis and its report) and as a whole command
(a new Python process, imports included). Prints the times; asserts nothing."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.harness.paths

from click.testing import CliRunner  # noqa: E402

from tests.harness.paths import VALUES  # noqa: E402
from tests.unit.bench_synthetic import write_sweep  # noqa: E402
from vllm_eks.cli.main import main  # noqa: E402

LEVELS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
PLAN = VALUES / "llama-3.1-8b-g6e-xlarge" / "plan.json"


def sweep_rows() -> list[tuple[int, float, float, float]]:
    """Throughput saturating at concurrency 64, TTFT climbing once requests queue past it."""
    return [(c, 4000.0 * c / (c + 16) if c <= 64 else 3200.0 + c * 0.01, 200.0 * max(1.0, c / 64) ** 2,
             20.0 + min(c, 64) * 0.2) for c in LEVELS]


def _time_in_process(args: list[str], repeats: int = 5) -> float:
    runner = CliRunner()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        r = runner.invoke(main, args)
        best = min(best, time.perf_counter() - start)
        if r.exit_code != 0:
            raise SystemExit(f"bench analyze failed: {r.output}")
    return best


def _time_process(args: list[str], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "vllm_eks.cli.main", *args], check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main_() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sweep"
        write_sweep(folder, sweep_rows())
        cases = {
            "analyze": ["bench", "analyze", str(folder)],
            "analyze --plan": ["bench", "analyze", str(folder), "--plan", str(PLAN)],
            "analyze --plan --json": ["bench", "analyze", str(folder), "--plan", str(PLAN), "--json"],
            "analyze --plan --plots": ["bench", "analyze", str(folder), "--plan", str(PLAN), "--plots", f"{tmp}/plots"],
        }
        _time_in_process(cases["analyze --plan --plots"], repeats=1)  # import matplotlib once
        for name, args in cases.items():
            inproc = _time_in_process(args)
            whole = _time_process(args)
            print(f"bench {name}: {len(LEVELS)} concurrency levels, {inproc * 1000:.0f} ms in-process (best of 5), "
                  f"{whole:.2f} s as a new process (best of 3; target < 1 s)")


if __name__ == "__main__":
    main_()

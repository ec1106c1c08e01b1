"""PNG plots of a sweep: throughput vs concurrency, and TTFT and TPOT (p50, p99) vs concurrency on
a log scale. matplotlib with the Agg backend (no display needed)."""

from __future__ import annotations

from pathlib import Path

from vllm_eks.bench.results import BenchResult
from vllm_eks.core.errors import InvalidOptionError

THROUGHPUT_PNG = "throughput.png"
LATENCY_PNG = "latency.png"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _concurrency_axis(ax, conc: list[int]) -> None:
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    if len(conc) <= 12:
        ax.set_xticks(conc)


def _mark(ax, x: int | None, label: str, style: str) -> None:
    if x is not None:
        ax.axvline(x, linestyle=style, color="grey", linewidth=1, label=label)


def write_plots(results: list[BenchResult], out_dir: Path, knee: int | None = None,
                slo_limit: int | None = None, title: str = "") -> list[Path]:
    """Writes throughput.png and latency.png into out_dir (created); returns their paths."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidOptionError(f"--plots {out_dir}: cannot create the folder: {e.strerror or e}") from None
    plt = _pyplot()
    conc = [r.concurrency for r in results]
    paths = []

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    ax.plot(conc, [r.output_throughput for r in results], "o-", label="output tokens/s")
    ax.plot(conc, [r.total_token_throughput for r in results], "s--", label="total tokens/s")
    _mark(ax, knee, f"knee ({knee})", ":")
    _mark(ax, slo_limit, f"SLO limit ({slo_limit})", "-.")
    _concurrency_axis(ax, conc)
    ax.set_xlabel("concurrency (max in-flight requests)")
    ax.set_ylabel("tokens per second")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title(f"Throughput vs concurrency {title}".strip())
    fig.tight_layout()
    paths.append(out_dir / THROUGHPUT_PNG)
    fig.savefig(paths[-1])
    plt.close(fig)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=100)
    for ax, metric, name in ((ax1, "ttft", "TTFT"), (ax2, "tpot", "TPOT")):
        ax.plot(conc, [getattr(r, f"median_{metric}_ms") for r in results], "o-", label=f"{name} p50")
        ax.plot(conc, [getattr(r, f"p99_{metric}_ms") for r in results], "s--", label=f"{name} p99")
        _mark(ax, knee, f"knee ({knee})", ":")
        _mark(ax, slo_limit, f"SLO limit ({slo_limit})", "-.")
        _concurrency_axis(ax, conc)
        ax.set_yscale("log")
        ax.set_xlabel("concurrency")
        ax.set_ylabel(f"{name} (ms, log scale)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        ax.set_title(f"{name} vs concurrency")
    fig.tight_layout()
    paths.append(out_dir / LATENCY_PNG)
    fig.savefig(paths[-1])
    plt.close(fig)
    return paths

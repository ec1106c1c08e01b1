"""`vllm-eks bench run`: one `vllm bench serve` per concurrency level against a running
endpoint, each saving its result JSON (--save-result) into one folder, with a progress bar.

The arguments are those of vLLM 0.32's `vllm bench serve` (vllm/benchmarks/serve.py): --base-url,
--model, --dataset-name/--dataset-path, --random-input-len/--random-output-len,
--max-concurrency, --num-prompts, --percentile-metrics, --metric-percentiles, --save-result,
--result-dir, --result-filename."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from vllm_eks.core.errors import BenchmarkRunError, InvalidOptionError

PERCENTILE_METRICS = "ttft,tpot,itl,e2el"
METRIC_PERCENTILES = "50,90,99"
MIN_PROMPTS, PROMPTS_PER_SLOT = 20, 5


def parse_levels(text: str) -> list[int]:
    """--concurrency 1,2,4,8 -> [1, 2, 4, 8] (sorted, distinct, positive)."""
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InvalidOptionError(f"--concurrency {text!r}: give positive integers separated by commas, "
                                 "e.g. 1,2,4,8") from None
    if not levels or min(levels) < 1:
        raise InvalidOptionError(f"--concurrency {text!r}: give positive integers separated by commas, e.g. 1,2,4,8")
    return sorted(set(levels))


def vllm_command(vllm: str | None) -> list[str]:
    """The words that start `vllm` (then `bench serve ...`): --vllm as given (an executable or a
    command prefix), else `vllm` on PATH."""
    if vllm is None:
        found = shutil.which("vllm")
        if found is None:
            raise InvalidOptionError("no `vllm` executable on PATH: install vLLM there or give --vllm PATH")
        return [found]
    bad = next((c for c in vllm if ord(c) < 0x20 or ord(c) == 0x7f), None)
    if bad is not None:  # shlex would split at a newline and run a second word as an argument
        raise InvalidOptionError(f"--vllm {vllm!r}: control character {bad!r} in it; give the executable "
                                 "(or command prefix) on one line")
    try:
        words = shlex.split(vllm)
    except ValueError as e:  # an unterminated quote or a trailing backslash
        raise InvalidOptionError(f"--vllm {vllm!r}: cannot split it like a shell ({e}); "
                                 "close the quote or give the executable's path alone") from None
    if not words:
        raise InvalidOptionError("--vllm is empty: give the vllm executable")
    exe = words[0]
    if shutil.which(exe) is None and not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        raise InvalidOptionError(f"--vllm {vllm!r}: {exe} is not an executable file or a command on PATH")
    return words


def result_name(concurrency: int) -> str:
    return f"concurrency-{concurrency:04d}.json"


def bench_args(url: str, model: str, concurrency: int, out_dir: Path, input_len: int, output_len: int,
               num_prompts: int | None, dataset: str | None, dataset_name: str, tokenizer: str | None) -> list[str]:
    """The `bench serve ...` arguments of one level."""
    prompts = num_prompts if num_prompts is not None else max(MIN_PROMPTS, PROMPTS_PER_SLOT * concurrency)
    args = ["bench", "serve", "--backend", "openai", "--base-url", url.rstrip("/"), "--model", model,
            "--max-concurrency", str(concurrency), "--num-prompts", str(prompts),
            "--percentile-metrics", PERCENTILE_METRICS, "--metric-percentiles", METRIC_PERCENTILES,
            "--save-result", "--result-dir", str(out_dir), "--result-filename", result_name(concurrency)]
    if dataset is None:
        args += ["--dataset-name", "random", "--random-input-len", str(input_len),
                 "--random-output-len", str(output_len)]
    else:
        args += ["--dataset-name", dataset_name, "--dataset-path", dataset]
    if tokenizer:
        args += ["--tokenizer", tokenizer]
    return args


def check_inputs(out_dir: Path, input_len: int, output_len: int, num_prompts: int | None,
                 dataset: str | None) -> None:
    """Flag errors before anything runs; creates out_dir."""
    if input_len < 1 or output_len < 1:
        raise InvalidOptionError(f"--input-len and --output-len must be >= 1, got {input_len} and {output_len}")
    if num_prompts is not None and num_prompts < 1:
        raise InvalidOptionError(f"--num-prompts must be >= 1, got {num_prompts}")
    if dataset is not None and not Path(dataset).is_file():
        raise InvalidOptionError(f"--dataset {dataset}: no such file")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidOptionError(f"--out {out_dir}: cannot create the folder: {e.strerror or e}") from None


def run_sweep(command: list[str], url: str, model: str, levels: list[int], out_dir: Path, *, input_len: int = 256,
              output_len: int = 128, num_prompts: int | None = None, dataset: str | None = None,
              dataset_name: str = "custom", tokenizer: str | None = None,
              on_level: Callable[[int, str], None] | None = None) -> list[Path]:
    """Runs every level in turn; each level's output goes to concurrency-NNNN.log beside its
    result. `on_level(concurrency, state)` is called with "start" and "done" for progress."""
    check_inputs(out_dir, input_len, output_len, num_prompts, dataset)
    written = []
    for c in levels:
        if on_level:
            on_level(c, "start")
        log = out_dir / result_name(c).replace(".json", ".log")
        result = out_dir / result_name(c)
        result.unlink(missing_ok=True)  # a file from an earlier sweep must not pass for this one
        argv = command + bench_args(url, model, c, out_dir, input_len, output_len, num_prompts, dataset,
                                    dataset_name, tokenizer)
        with log.open("w") as f:
            f.write("$ " + shlex.join(argv) + "\n")
            f.flush()
            try:
                rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, check=False).returncode
            except OSError as e:
                raise BenchmarkRunError(f"--vllm {command[0]}: cannot run it: {e.strerror or e}") from None
        if rc != 0:
            raise BenchmarkRunError(f"vllm bench serve at concurrency {c} exited {rc}; its output is in {log}")
        if not result.is_file():
            raise BenchmarkRunError(f"vllm bench serve at concurrency {c} wrote no {result}; its output is in {log}")
        written.append(result)
        if on_level:
            on_level(c, "done")
    return written

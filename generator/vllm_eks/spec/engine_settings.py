"""vLLM engine settings as data, and the one place they become `vllm serve` flags.

A Plan holds the settings the engine reads as a mapping keyed by vLLM's own EngineArgs field
names (`max_model_len: 4096`). Ray Serve LLM receives that mapping as `engine_kwargs` as it is;
the Deployment and the LeaderWorkerSet receive `serve_flags(settings)`. Parallelism, the served
name, the drain timeout and the load format are typed Plan fields, rendered by the chart from
their own values; `serve_args` puts them around the settings for `plan --json` and `explain`."""

from __future__ import annotations

import json
from collections.abc import Mapping

# One EngineArgs value: a scalar, or a JSON object for the config-valued fields
# (kv_transfer_config).
EngineValue = bool | int | float | str | dict
EngineSettings = dict[str, EngineValue]


def engine_settings(*, dtype: str, max_model_len: int, gpu_memory_utilization: float,
                    kv_cache_memory_bytes: int | None, max_num_seqs: int, max_num_batched_tokens: int,
                    block_size: int, quantization: str | None, kv_cache_dtype: str,
                    async_scheduling: bool) -> EngineSettings:
    """The settings of one engine, in the order `explain` and the values files show them.
    Only what differs from vLLM's behaviour without the flag is set, except the numbers the
    Plan sized, which are always explicit."""
    s: EngineSettings = {"dtype": dtype, "max_model_len": max_model_len}
    if kv_cache_memory_bytes is not None:
        s["kv_cache_memory_bytes"] = kv_cache_memory_bytes
    else:
        s["gpu_memory_utilization"] = gpu_memory_utilization
    s.update(max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, block_size=block_size,
             enable_chunked_prefill=True, enable_prefix_caching=True)
    if quantization:
        s["quantization"] = quantization
    if kv_cache_dtype != "auto":
        s["kv_cache_dtype"] = kv_cache_dtype
    if not async_scheduling:
        s["async_scheduling"] = False
    return s


def flag_name(field: str) -> str:
    """EngineArgs field -> its long flag (vLLM's argument parser maps _ to -)."""
    return "--" + field.replace("_", "-")


def serve_flags(settings: Mapping[str, EngineValue]) -> list[str]:
    """`vllm serve` flags of the settings: True -> `--x`, False -> `--no-x` (vLLM's boolean
    flags are BooleanOptionalAction), objects as compact JSON, floats without trailing zeros."""
    out: list[str] = []
    for field, value in settings.items():
        flag = flag_name(field)
        if value is True:
            out.append(flag)
        elif value is False:
            out.append("--no-" + flag[2:])
        elif isinstance(value, dict):
            out += [flag, json.dumps(value, separators=(",", ":"))]
        elif isinstance(value, float):
            out += [flag, f"{value:g}"]
        else:
            out += [flag, str(value)]
    return out


def serve_args(*, served_model_name: str, tensor_parallel_size: int, pipeline_parallel_size: int,
               settings: Mapping[str, EngineValue], load_format: str | None,
               shutdown_timeout_seconds: int) -> list[str]:
    """The whole argument list after `vllm serve MODEL`: the typed fields the chart owns around
    the engine settings."""
    args = ["--served-model-name", served_model_name,
            "--tensor-parallel-size", str(tensor_parallel_size),
            "--pipeline-parallel-size", str(pipeline_parallel_size)]
    args += serve_flags(settings)
    if load_format:
        args += ["--load-format", load_format]
    return args + ["--shutdown-timeout", str(shutdown_timeout_seconds)]

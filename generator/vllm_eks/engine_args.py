"""The `vllm serve` argument list of a Plan. The model itself is the chart's positional
argument (it may be a repo id, an s3:// URI or a mounted path); everything else is here."""

from __future__ import annotations


def engine_args(*, tp: int, pp: int, dtype: str, quantization: str | None, kv_cache_dtype: str,
                max_model_len: int, gpu_memory_utilization: float, kv_cache_memory_bytes: int | None,
                max_num_seqs: int, max_num_batched_tokens: int, block_size: int, served_model_name: str,
                shutdown_timeout: int, s3: bool, async_scheduling: bool = True) -> list[str]:
    args = [
        "--served-model-name", served_model_name,
        "--tensor-parallel-size", str(tp),
        "--pipeline-parallel-size", str(pp),
        "--dtype", dtype,
        "--max-model-len", str(max_model_len),
    ]
    if kv_cache_memory_bytes is not None:
        args += ["--kv-cache-memory-bytes", str(kv_cache_memory_bytes)]
    else:
        args += ["--gpu-memory-utilization", f"{gpu_memory_utilization:g}"]
    args += [
        "--max-num-seqs", str(max_num_seqs),
        "--max-num-batched-tokens", str(max_num_batched_tokens),
        "--block-size", str(block_size),
        "--enable-chunked-prefill",
        "--enable-prefix-caching",
    ]
    if quantization:
        args += ["--quantization", quantization]
    if kv_cache_dtype != "auto":
        args += ["--kv-cache-dtype", kv_cache_dtype]
    if s3:
        args += ["--load-format", "runai_streamer"]
    if not async_scheduling:
        args += ["--no-async-scheduling"]
    args += ["--shutdown-timeout", str(shutdown_timeout)]
    return args

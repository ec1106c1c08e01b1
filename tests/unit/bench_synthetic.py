"""Synthetic `vllm bench serve --save-result` objects with chosen figures, shaped like vLLM 0.32's
(vllm/benchmarks/serve.py): the keys it writes by default, consistent with each other."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "data" / "bench"
CPU_SWEEP = FIXTURES / "cpu-sweep"


def result_dict(c: int, out_tps: float, ttft_p99_ms: float = 100.0, tpot_p99_ms: float = 20.0, *,
                ttft_p50_ms: float | None = None, tpot_p50_ms: float | None = None, input_len: int = 256,
                output_len: int = 128, completed: int = 100) -> dict:
    req_s = out_tps / output_len
    ttft_p50 = ttft_p99_ms * 0.8 if ttft_p50_ms is None else ttft_p50_ms
    tpot_p50 = tpot_p99_ms * 0.9 if tpot_p50_ms is None else tpot_p50_ms
    return {
        "date": "20261130-120000", "endpoint_type": "openai", "backend": "openai", "label": None,
        "model_id": "synthetic/model", "tokenizer_id": "synthetic/model", "num_prompts": completed,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": c,
        "duration": completed / req_s if req_s else 1.0, "completed": completed, "failed": 0,
        "total_input_tokens": completed * input_len, "total_output_tokens": completed * output_len,
        "request_throughput": req_s, "request_goodput": None, "output_throughput": out_tps,
        "total_token_throughput": out_tps * (input_len + output_len) / output_len,
        "max_output_tokens_per_s": out_tps * 1.1, "max_concurrent_requests": c, "rtfx": 0.0,
        "mean_ttft_ms": ttft_p50, "median_ttft_ms": ttft_p50, "std_ttft_ms": 1.0, "p99_ttft_ms": ttft_p99_ms,
        "mean_tpot_ms": tpot_p50, "median_tpot_ms": tpot_p50, "std_tpot_ms": 1.0, "p99_tpot_ms": tpot_p99_ms,
        "mean_itl_ms": tpot_p50, "median_itl_ms": tpot_p50, "std_itl_ms": 1.0, "p99_itl_ms": tpot_p99_ms,
    }


def write_sweep(folder: Path, rows: list[tuple]) -> list[str]:
    """rows: (concurrency, output tokens/s, p99 TTFT ms, p99 TPOT ms) -> the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for row in rows:
        p = folder / f"concurrency-{row[0]:04d}.json"
        p.write_text(json.dumps(result_dict(*row)))
        paths.append(str(p))
    return paths

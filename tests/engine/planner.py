"""The generator's KV sizing prediction for a tiny model, through its public CLI
(`vllm-eks plan --model <config.json> ... --json`), as a user would ask for it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# Any GPU larger than the budgets used here: the KV budget is pinned with --kv-cache-memory,
# so the GPU size only has to make the plan feasible.
_GPU_MEMORY_MIB = 81559


@dataclass(frozen=True)
class Prediction:
    kv_cache_tokens: int
    max_concurrency: float
    block_size: int
    max_model_len: int
    command: str

    @property
    def concurrency_as_logged(self) -> str:
        return f"{self.max_concurrency:.2f}"


def vllm_eks() -> str:
    exe = Path(sys.executable).with_name("vllm-eks")
    if not exe.exists():
        raise FileNotFoundError(f"{exe} missing: run make venv")
    return str(exe)


def predict(config_json: str, *, kv_cache_gib: float, block_size: int, max_model_len: int,
            max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None) -> Prediction:
    cmd = [vllm_eks(), "plan", "--model", config_json, "--gpu-memory-mib", str(_GPU_MEMORY_MIB),
           "--gpus-per-node", "1", "--kv-cache-memory", f"{kv_cache_gib:g}",
           "--block-size", str(block_size), "--max-model-len", str(max_model_len)]
    if max_num_seqs is not None:
        cmd += ["--max-num-seqs", str(max_num_seqs)]
    if max_num_batched_tokens is not None:
        cmd += ["--max-num-batched-tokens", str(max_num_batched_tokens)]
    cmd.append("--json")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    shown = " ".join(["vllm-eks", *cmd[1:]])
    if proc.returncode != 0:
        raise AssertionError(f"{shown} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    plan = json.loads(proc.stdout)
    return Prediction(int(plan["kv_cache_tokens"]), float(plan["max_concurrency"]),
                      int(plan["block_size"]), int(plan["max_model_len"]), shown)

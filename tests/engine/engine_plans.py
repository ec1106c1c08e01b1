"""The generator's KV sizing prediction for a tiny model, through its public CLI
(`vllm-eks plan --model <config.json> ... --json`), as a user would ask for it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# Any GPU larger than the budgets used here: the KV budget is pinned with --kv-cache-memory,
# so the GPU size only has to make the plan feasible (one H100, as on p5.4xlarge).
_GPU_MEMORY_MIB = 81559
_HARDWARE = "p5.4xlarge"


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


@lru_cache(maxsize=1)
def _plan_help() -> str:
    return subprocess.run([vllm_eks(), "plan", "--help"], capture_output=True, text=True,
                          timeout=60).stdout


# vLLM's CPU platform turns async scheduling off (vllm/platforms/cpu.py
# check_and_update_config: scheduler_config.async_scheduling = False), so a sliding-window layer
# group keeps one max_num_batched_tokens step in flight per request on CPU where a GPU with
# async scheduling keeps two (VllmConfig.max_concurrent_batches / max_in_flight_tokens). The
# prediction must be asked for the same engine setting; this option is passed as soon as the
# generator offers it.
NO_ASYNC_SCHEDULING_FLAG = "--no-async-scheduling"


def vllm_eks() -> str:
    exe = Path(sys.executable).with_name("vllm-eks")
    if not exe.exists():
        raise FileNotFoundError(f"{exe} missing: run make venv")
    return str(exe)


def predict(config_json: str, *, kv_cache_gib: float, block_size: int, max_model_len: int,
            max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None) -> Prediction:
    cmd = [vllm_eks(), "plan", "--model", config_json, "--model-source", str(Path(config_json).parent),
           "--gpu-memory-mib", str(_GPU_MEMORY_MIB), "--gpus-per-node", "1", "--hardware-name", _HARDWARE,
           "--kv-cache-memory", f"{kv_cache_gib:g}", "--block-size", str(block_size), "--max-model-len", str(max_model_len)]
    if max_num_seqs is not None:
        cmd += ["--max-num-seqs", str(max_num_seqs)]
    if max_num_batched_tokens is not None:
        cmd += ["--max-num-batched-tokens", str(max_num_batched_tokens)]
    if NO_ASYNC_SCHEDULING_FLAG in _plan_help():
        cmd.append(NO_ASYNC_SCHEDULING_FLAG)
    cmd.append("--json")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    shown = " ".join(["vllm-eks", *cmd[1:]])
    if proc.returncode != 0:
        raise AssertionError(f"{shown} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    plan = json.loads(proc.stdout)
    return Prediction(int(plan["kv_cache_tokens"]), float(plan["max_concurrency"]),
                      int(plan["block_size"]), int(plan["max_model_len"]), shown)


def prediction_caveat() -> str:
    """Said next to a mismatch while the generator cannot be asked for the CPU's setting."""
    if NO_ASYNC_SCHEDULING_FLAG in _plan_help():
        return ""
    return (f"\n  note: this CPU engine runs without async scheduling (vllm/platforms/cpu.py); "
            f"`vllm-eks plan` has no {NO_ASYNC_SCHEDULING_FLAG} option yet, so sliding-window "
            f"layers are predicted with two steps in flight instead of one")

"""KV cache offload to host memory (--kv-offload-gib): the arguments the chart renders from a Plan
with offloading reach vLLM's own parser and config, which size the buffer as the Plan does.

vLLM 0.32's native offloading runs on CUDA and XPU only: CPUOffloadingSpec.get_worker raises "CPU
Offloading is currently only supported on CUDA-alike and XPU GPUs" (vllm/v1/kv_offload/cpu/spec.py).
The CPU build still parses the flag, builds the OffloadingConnector's kv_transfer_config and its
offloading spec (blocks and block bytes) in every worker before that check; both are compared with
the Plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.engine import scenarios as sc
from tests.engine.cpu import cpu_substitutions
from tests.engine.engine_env import run_script
from tests.engine.report import REPORT
from tests.engine.server import free_port
from vllm_eks.core.units import GIB
from vllm_eks.output.scenario_folder import values_document
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.plan import Plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values

KV_GIB = 1
OFFLOAD_GIB = 1
BLOCK_SIZE = 128  # the CPU default (the CPU kernel pages multiples of 32)
MAX_MODEL_LEN = 1000


@pytest.fixture(scope="module")
def offload_case(tiny_models, engine_workdir: Path) -> tuple[Plan, list[str], dict[str, str]]:
    """The Plan of the tiny llama with 1 GiB KV and 1 GiB offload, and the `vllm serve` arguments
    the chart renders from its values, changed only where a CPU machine requires it."""
    path = tiny_models["llama"]["path"]
    plan = make_plan(PlanRequest(model=f"{path}/config.json", model_source="/models/llama", gpu_memory_mib=81559,
                                 gpus_per_node=1, hardware_name="p5.4xlarge", kv_cache_memory_gib=KV_GIB,
                                 block_size=BLOCK_SIZE, max_model_len=MAX_MODEL_LEN, kv_offload_gib=OFFLOAD_GIB))
    values = engine_workdir / "kv-offload-values.yaml"
    # a local folder as the source is a claim (--model-source-kind pvc); the CPU run loads the folder
    options = ValuesOptions(pvc_name="models")
    values.write_text(yaml.safe_dump(values_document(build_values(plan, options)), sort_keys=False))
    (inv,) = sc.serve_invocations("kv-offload", sc.render_chart(sc.CHART_VLLM, values))
    assert sc.flag_value(inv.args, "--kv-offloading-size") is not None, inv.args
    sub = cpu_substitutions(inv.args, tiny_model=path, port=free_port(), kv_cache_gib=KV_GIB)
    return plan, sub.args + ["--enforce-eager"], sub.env


def test_vllm_sizes_the_offload_buffer_as_the_plan(engine, offload_case) -> None:
    plan, args, _ = offload_case
    proc = run_script("kv_offload_sizing.py", str(KV_GIB * GIB), stdin=json.dumps(args), timeout=600)
    assert proc.returncode == 0, f"kv_offload_sizing.py failed:\n{proc.stderr[-4000:]}"
    got = json.loads(proc.stdout)
    o = plan.kv_offload
    assert o is not None
    REPORT.note(f"KV offload {OFFLOAD_GIB} GiB: vLLM cpu_bytes_to_use {got['cpu_bytes_to_use']:,}, "
                f"{got['num_chunks']:,} blocks of {got['kv_bytes_per_chunk']:,} B; Plan {o.kv_offload_bytes:,}, "
                f"{o.kv_offload_blocks:,} of {o.kv_offload_block_bytes:,} B, +{o.kv_offload_tokens:,} tokens")
    assert got["kv_connector"] == "OffloadingConnector" and got["kv_role"] == "kv_both", got
    assert got["cpu_bytes_to_use"] == o.kv_offload_bytes, got
    assert got["block_size"] == plan.memory.block_size == BLOCK_SIZE, got
    assert (got["num_chunks"], got["kv_bytes_per_chunk"]) == (o.kv_offload_blocks, o.kv_offload_block_bytes), got
    assert got["num_chunks"] * got["blocks_per_chunk"] * got["block_size"] == o.kv_offload_tokens, got

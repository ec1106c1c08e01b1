"""--kv-offload-gib: vLLM's CPU KV offload buffer in the Plan (planning/kv_offload.py): its bytes, per-rank
share, offloaded block and extra prefix tokens; the host memory it adds to /dev/shm and the pod,
checked against the node's allocatable; the topologies it applies to."""

from __future__ import annotations

import pytest

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB
from vllm_eks.planning import pod_resources as sizing
from vllm_eks.planning.kv_offload import PAGE_BYTES
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.plan import Plan
from vllm_eks.spec.request import PlanRequest


def _plan(**kw) -> Plan:
    return make_plan(PlanRequest(**kw))


def test_buffer_blocks_and_tokens_follow_vllms_arithmetic():
    p = _plan(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=8)
    o = p.kv_offload
    assert o.kv_offload_bytes == 8 * GIB and o.kv_offload_bytes_per_rank == 8 * GIB
    # one rank, full attention: one offloaded block is one GPU block of every layer, page-aligned
    gpu_block = p.memory.kv_bytes_per_token_per_gpu * p.memory.block_size
    assert o.kv_offload_block_bytes == -(-gpu_block // PAGE_BYTES) * PAGE_BYTES
    assert o.kv_offload_blocks == o.kv_offload_bytes // o.kv_offload_block_bytes
    assert o.kv_offload_tokens == o.kv_offload_blocks * p.memory.block_size
    assert p.engine.settings["kv_offloading_size"] == 8


def test_the_size_is_split_over_the_ranks_and_blocks_hold_every_rank():
    p = _plan(model="llama-3.1-70b-instruct", instance="p5.48xlarge", kv_offload_gib=64)
    tp = p.layout.tensor_parallel_size
    o = p.kv_offload
    assert tp > 1 and o.kv_offload_bytes_per_rank == 64 * GIB // tp
    # the same tokens as one rank holding the whole model's KV: each block carries all ranks' shares
    assert o.kv_offload_block_bytes == p.memory.kv_bytes_per_token_per_gpu * p.memory.block_size * tp


def test_mla_at_tp_above_one_is_offloaded_once():
    p = _plan(model="deepseek-v3", instance="p6-b300.48xlarge", kv_offload_gib=64)
    assert p.layout.tensor_parallel_size > 1 and p.layout.pipeline_parallel_size == 1
    per_rank_block = p.memory.kv_bytes_per_token_per_gpu * p.memory.block_size
    assert p.kv_offload.kv_offload_block_bytes == -(-per_rank_block // PAGE_BYTES) * PAGE_BYTES


def test_buffer_goes_into_shm_and_the_pod_holds_it():
    base = _plan(model="qwen3-8b", instance="g6e.xlarge")
    p = _plan(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=8)
    assert p.pod.shm_size_bytes == base.pod.shm_size_bytes + 8 * GIB
    need = p.pod.shm_size_bytes + sizing.ENGINE_HOST_MEMORY_PER_GPU * p.layout.gpus_per_pod
    assert p.pod.memory_request_bytes >= need
    (d,) = [d for d in p.pod.derivations if d.key == "memory_request_bytes"]
    assert "KV offload buffer 8.00 GiB" in d.formula


def test_outside_the_catalog_the_request_grows_by_the_buffer():
    kw = dict(model="qwen3-8b", gpu_memory_mib=46068, gpus_per_node=1, hardware_name="g6e.xlarge", max_model_len=8192)
    base, p = _plan(**kw), _plan(**kw, kv_offload_gib=4)
    assert p.pod.memory_request_bytes == base.pod.memory_request_bytes + 4 * GIB


def test_a_buffer_the_node_cannot_hold_is_refused_with_the_numbers(cli):
    with pytest.raises(InvalidOptionError) as e:
        _plan(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=16)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("--kv-offload-gib 16 on g6e.xlarge:")
    assert "26.00 GiB" in msg and "24.63 GiB" in msg and "at most 14.62 GiB fits" in msg
    # the largest size it names fits, a little more does not
    assert _plan(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=14.62).kv_offload is not None
    with pytest.raises(InvalidOptionError):
        _plan(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=14.64)
    r = cli("plan", "--model", "qwen3-8b", "--instance", "g6e.xlarge", "--kv-offload-gib", "16")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", ["0", "-1", "5000"])
def test_a_bad_size_is_one_line_naming_the_flag(cli, bad):
    r = cli("plan", "--model", "qwen3-8b", "--instance", "g6e.xlarge", "--kv-offload-gib", bad)
    assert r.exit_code != 0 and "--kv-offload-gib" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_ray_serve_takes_it_on_vllm_0_26():
    p = _plan(model="llama-3.1-70b-instruct", instance="g6e.12xlarge", topology="ray-serve", kv_offload_gib=32)
    assert p.engine.vllm_version == "0.26.0" and p.engine.settings["kv_offloading_size"] == 32


def test_multi_node_holds_the_whole_buffer_on_every_node():
    p = _plan(model="llama-3.1-405b-instruct", instance="p5.48xlarge", kv_offload_gib=64)
    assert p.topology == "multi-node"
    assert p.kv_offload.kv_offload_host_bytes_per_pod == 64 * GIB
    assert p.kv_offload.kv_offload_bytes_per_rank == 64 * GIB // (p.layout.tensor_parallel_size
                                                                   * p.layout.pipeline_parallel_size)


def test_disaggregated_is_refused_naming_flag_and_topology(cli):
    r = cli("plan", "--model", "qwen3-8b", "--instance", "g6.8xlarge", "--topology", "disaggregated",
            "--max-model-len", "4096", "--kv-offload-gib", "4")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "--kv-offload-gib" in r.stderr and "disaggregated topology" in r.stderr


def test_plan_json_gains_the_section_only_with_the_flag_and_reads_back():
    base = _plan(model="qwen3-8b", instance="g6e.xlarge").json_summary()
    s = _plan(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=8).json_summary()
    assert "kv_offload" not in base and set(base) <= set(s)
    assert s["kv_offload"]["kv_offload_tokens"] > 0
    again = Plan.from_summary(s)
    assert again.kv_offload == Plan.from_summary(s).kv_offload and again.json_summary()["kv_offload"] == s["kv_offload"]


def test_explain_shows_the_extra_prefix_tokens(cli):
    r = cli("explain", "--model", "qwen3-8b", "--instance", "g6e.xlarge", "--kv-offload-gib", "8")
    assert r.exit_code == 0
    p = _plan(model="qwen3-8b", instance="g6e.xlarge", kv_offload_gib=8)
    assert f"kv_offload_tokens = {p.kv_offload.kv_offload_tokens:,}" in r.stdout
    assert "--kv-offloading-size 8" in r.stdout

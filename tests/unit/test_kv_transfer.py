"""NIXL's KV buffer of a disaggregated Plan follows the instance's GPUDirect RDMA: GPU memory where
EFA reads it directly, a host copy elsewhere, whose memory the pod must hold and whose copies the
TTFT SLO counts (planning/kv_transfer.py, catalog/gpudirect.py)."""

from __future__ import annotations

import json

import pytest

from vllm_eks.catalog.gpudirect import supports_gpudirect_rdma
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB
from vllm_eks.planning import latency
from vllm_eks.planning import pod_resources as sizing
from vllm_eks.planning.kv_transfer import HOST_COPY_BYTES_PER_S
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest


def _disaggregated(instance: str, **kw):
    return make_plan(PlanRequest(model="qwen3-8b", instance=instance, topology="disaggregated",
                                 max_model_len=4096, **kw))


def _kv_config(phase) -> dict:
    return phase.settings["kv_transfer_config"]


@pytest.mark.parametrize(("instance", "gdr"), [
    ("p4d.24xlarge", True), ("p4de.24xlarge", True), ("p5.48xlarge", True), ("p5.4xlarge", True),
    ("p5e.48xlarge", True), ("p5en.48xlarge", True), ("p6-b200.48xlarge", True), ("p6-b300.48xlarge", True),
    ("g6.8xlarge", False), ("g6e.48xlarge", False), ("g5.48xlarge", False), ("g4dn.metal", False),
    ("gr6.8xlarge", False), ("g7e.48xlarge", False)])
def test_catalog_records_gpudirect_rdma_per_instance_type(instance, gdr):
    assert instance_catalog()[instance].gpudirect_rdma is gdr


def test_types_outside_the_catalog_follow_the_family_rule():
    # EC2's DescribeInstanceTypes has no GPUDirect RDMA field: an unknown size of a family gets its family's answer
    assert supports_gpudirect_rdma("p5en.96xlarge") and supports_gpudirect_rdma("P4D.24XLARGE")
    assert not supports_gpudirect_rdma("g6e.96xlarge") and not supports_gpudirect_rdma("p3dn.24xlarge")


def test_without_gpudirect_rdma_the_kv_cache_moves_through_a_host_buffer():
    p = _disaggregated("g6.8xlarge")
    for phase in (p.prefill, p.decode):
        assert phase.kv_buffer_device == "cpu" and _kv_config(phase)["kv_buffer_device"] == "cpu"
        assert _kv_config(phase)["kv_connector_extra_config"] == {"backends": ["LIBFABRIC"]}
        # the host buffer mirrors the whole KV cache of every GPU of the pod
        assert phase.host_kv_buffer_bytes == p.memory.available_kv_cache_bytes_per_gpu * p.layout.gpus_per_pod
    # the pod's memory request holds it beside shm and the engine's own host memory
    need = p.pod.shm_size_bytes + sizing.ENGINE_HOST_MEMORY_PER_GPU * p.layout.gpus_per_pod \
        + p.prefill.host_kv_buffer_bytes
    assert p.pod.memory_request_bytes >= need
    args = p.json_summary()["prefill"]["engine_args"]
    assert json.loads(args[args.index("--kv-transfer-config") + 1])["kv_buffer_device"] == "cpu"


def test_host_copies_cost_transfer_time_and_ttft():
    p = _disaggregated("g6.8xlarge")
    kv = 2048 * p.memory.kv_bytes_per_token_per_gpu
    over_efa = kv / (25_000e6 / 8)
    assert p.prefill.kv_transfer_seconds == pytest.approx(over_efa + 2 * kv / HOST_COPY_BYTES_PER_S, abs=1e-3)
    # the same model and instance aggregated: its TTFT has no transfer term
    alone = make_plan(PlanRequest(model="qwen3-8b", instance="g6.8xlarge", max_model_len=4096))
    assert p.slo.slo_ttft_p99_seconds == pytest.approx(
        alone.slo.slo_ttft_p99_seconds + latency.TTFT_HEADROOM * p.prefill.kv_transfer_seconds, abs=0.011)
    lines = {d.key: d for d in p.derivations}
    assert "kv_transfer_seconds" in lines["slo_ttft_p99_seconds"].formula
    assert "no GPUDirect RDMA" in lines["kv_buffer_device"].formula


def test_with_gpudirect_rdma_nixl_reads_gpu_memory():
    p = _disaggregated("p5.48xlarge")
    for phase in (p.prefill, p.decode):
        assert phase.kv_buffer_device == "cuda" and _kv_config(phase)["kv_buffer_device"] == "cuda"
        assert phase.host_kv_buffer_bytes == 0
    g6 = _disaggregated("g6.8xlarge")
    # no host copies: the same tokens take only the network
    per_token = p.memory.kv_bytes_per_token_per_gpu * p.layout.gpus_per_pod
    share = p.layout.gpus_per_pod / instance_catalog()["p5.48xlarge"].gpus_per_node
    assert p.prefill.kv_transfer_seconds == pytest.approx(
        2048 * per_token / (instance_catalog()["p5.48xlarge"].network_mbps * 1e6 / 8 * share), abs=1e-3)
    assert p.prefill.kv_transfer_seconds < g6.prefill.kv_transfer_seconds


def test_a_host_buffer_the_node_cannot_hold_is_refused():
    # a DaemonSet reserve that leaves the pod 5.5 GiB: shm, the engine and the KV host copy need more
    with pytest.raises(InvalidOptionError) as e:
        _disaggregated("g6.8xlarge", daemonset_reserve_memory="110Gi")
    msg = str(e.value)
    assert "\n" not in msg and "--instance g6.8xlarge" in msg and "NIXL host KV buffer" in msg
    assert "GPUDirect RDMA" in msg
    # the same reserve without the host buffer plans as before (no new check there)
    assert make_plan(PlanRequest(model="qwen3-8b", instance="g6.8xlarge", max_model_len=4096,
                                 daemonset_reserve_memory="110Gi")).pod.memory_request_bytes < 6 * GIB


def test_the_refusal_is_one_cli_line(cli):
    r = cli("plan", "--model", "qwen3-8b", "--instance", "g6.8xlarge", "--topology", "disaggregated",
            "--max-model-len", "4096", "--daemonset-reserve-memory", "110Gi")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "host memory" in r.stderr and "Traceback" not in r.stderr

"""The multi-node topology of charts/vllm-inference: EFA devices, NCCL settings, the
LeaderWorkerSet group and the helm test diagnostics of its GPU interconnect and all-reduce;
and the builder of those sections from a multi-node Plan."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import (
    Int32,
    OptionalQuantity,
    ValuesModel,
)
from vllm_eks.values.vllm_inference.images import DiagnosticsImage
from vllm_eks.values.vllm_inference.pod import Probe

# NCCL must not pick the EKS Pod Identity link-local interface (pod-id-link0, 169.254.170.23)
# or container bridges for its socket bootstrap: aws-samples/aws-do-eks#54.
NCCL_SOCKET_IFNAME = "^lo,docker,veth,eni,pod-id-link0"


# Cross-node all-reduce below this fraction of the instance's network rating means NCCL did not
# reach EFA (a TCP fallback lands at a few percent of it).
ALLREDUCE_MIN_FRACTION = 0.25


# multi-node leader: one-token completion every 15 s, 30 s to answer (it queues behind running
# sequences), restart after 2 failures in a row.
ENGINE_LIVENESS = (15, 2, 30)


# --master-port of vLLM's multi-node launcher: vLLM's own default (ParallelConfig.master_port;
# 29500 is its data-parallel master port).
MASTER_PORT = 29501


class Efa(ValuesModel):
    devices: Int32 = Field(0, ge=0, description=(
        "vpc.amazonaws.com/efa requested by every GPU pod: the instance's maximum interface "
        "count (p5.48xlarge 32). 0: no EFA. The EFA device plugin (charts/gpu-infra) mounts the "
        "devices; no capability or privilege is needed (memlock is unlimited on EKS AMIs)"))
    hugepages2_mi: OptionalQuantity = Field("", alias="hugepages2Mi", description=(
        "hugepages-2Mi per pod for libfabric's bounce buffers (the nodes must pre-allocate them). "
        "Empty: none requested, and FI_EFA_USE_HUGE_PAGE=0 keeps libfabric on regular pages"))


class Nccl(ValuesModel):
    debug: Literal["", "VERSION", "WARN", "INFO", "TRACE"] = Field("WARN", description=(
        "NCCL_DEBUG on multi-node and EFA pods; INFO logs which transport NCCL chose "
        "(`NET/OFI Selected provider is efa` means EFA). Empty: not set"))
    socket_ifname: str = Field(NCCL_SOCKET_IFNAME, min_length=1, description=(
        "NCCL_SOCKET_IFNAME (bootstrap and socket fallback). The default excludes loopback, "
        "bridges and the EKS Pod Identity link-local interface pod-id-link0"))


class MultiNode(ValuesModel):
    group_size: Int32 = Field(2, ge=2, description=(
        "Pods per LeaderWorkerSet group (leaderWorkerTemplate.size): one per pipeline stage, so "
        "it equals engine.pipelineParallelSize; replicas counts groups"))
    master_port: int = Field(MASTER_PORT, ge=1024, le=65535, description=(
        "--master-port of vLLM's multi-node launcher: the leader listens on it, the workers "
        "connect to LWS_LEADER_ADDRESS on it"))
    liveness_probe: Probe = Field(
        default_factory=lambda: Probe(period_seconds=ENGINE_LIVENESS[0], failure_threshold=ENGINE_LIVENESS[1],
                                      timeout_seconds=ENGINE_LIVENESS[2]),
        description=(
            "The leader's liveness probe: the exec check of engine progress of probes.liveness "
            "(files/probes/engine_alive.py), because /health stays 200 after a worker is lost "
            "until a request fails. timeoutSeconds bounds the check"))
    exclusive_topology: str = Field("", pattern=r"^([a-z0-9A-Z][-a-z0-9A-Z_./]*)?$", description=(
        "leaderworkerset.sigs.k8s.io/exclusive-topology annotation: a node label key whose domain "
        "holds exactly one group (1:1 exclusive placement). Empty: not set. Do not use the zone "
        "key when replicas exceed the zones the pool spans"))


class GpuTopologyCheck(ValuesModel):
    enabled: bool = Field(True, description=(
        "helm test: parse `nvidia-smi topo -m` in every pod of every group and fail when two GPUs "
        "of one tensor-parallel group are not NVLink-connected. Off on PCIe-only instances"))


class AllReduceCheck(ValuesModel):
    enabled: bool = Field(True, description=(
        "helm test: NCCL all-reduce across each group (one process per GPU, started in every pod "
        "of the group with the serving image; no MPI) and fail when bus bandwidth is far below "
        "the instance's network rating (NCCL fell back to TCP)"))
    size_mi_b: Int32 = Field(256, ge=1, alias="sizeMiB", description=(
        "Message size in MiB; must fit in the GPU memory vLLM leaves free (1 - gpu-memory-utilization)"))
    iterations: Int32 = Field(20, ge=1, description="Timed all-reduce iterations (after 5 warm-up ones)")
    expected_bus_bandwidth_g_bps: float = Field(0.0, ge=0, alias="expectedBusBandwidthGBps", description=(
        "The instance's network rating in GB/s (the Plan's expected_bus_bandwidth_gbytes_per_s). 0: "
        "report the figure, never fail on it"))
    min_fraction: float = Field(ALLREDUCE_MIN_FRACTION, gt=0, le=1, description=(
        "Fail when measured bus bandwidth < minFraction x expectedBusBandwidthGBps"))
    port: int = Field(29555, ge=1024, le=65535, description="TCP port of the rendezvous on the leader pod")


class Diagnostics(ValuesModel):
    image: DiagnosticsImage = Field(default_factory=DiagnosticsImage, description=(
        "Image with python3 that finds the live groups' pods and runs the checks inside them"))
    timeout_seconds: Int32 = Field(900, ge=30, description="Seconds each check may run in a pod (exec timeout)")
    gpu_topology: GpuTopologyCheck = Field(default_factory=GpuTopologyCheck, description="GPU interconnect check")
    all_reduce: AllReduceCheck = Field(default_factory=AllReduceCheck,
                                       description="Cross-node all-reduce bandwidth check")


def multi_node_values(plan: Plan) -> tuple[MultiNode, Diagnostics]:
    """multiNode.* and diagnostics.* of a multi-node Plan: one pod per pipeline stage."""
    return MultiNode(group_size=plan.layout.nodes_per_replica), Diagnostics(
        # A PCIe-only instance has no NVLink to check; the all-reduce check still runs.
        gpu_topology=GpuTopologyCheck(enabled=plan.node.nvlink),
        all_reduce=AllReduceCheck(expected_bus_bandwidth_g_bps=plan.node.expected_bus_bandwidth_gbytes_per_s))

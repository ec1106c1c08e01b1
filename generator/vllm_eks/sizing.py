"""Pod-level numbers that follow from the memory plan: /dev/shm, CPU and memory requests,
ephemeral storage, probe and drain timings, EFA devices, cost."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .hardware import Hardware
from .units import GIB, MIB

# CPU and memory left on every GPU node for the DaemonSets the suite installs (NVIDIA and EFA
# device plugins, DCGM exporter) and the EKS add-ons every node runs (aws-node, kube-proxy,
# eks-pod-identity-agent, ebs-csi-node), taken off node allocatable before sharing it among pods.
DAEMONSET_RESERVE_CPU_M = 1000
DAEMONSET_RESERVE_MEMORY = 3 * GIB
# /dev/shm: NCCL and vLLM's shared-memory broadcast between ranks; 2 GiB per rank, capped.
SHM_PER_RANK = 2 * GIB
SHM_MAX = 16 * GIB
SHM_MIN = 1 * GIB
# Engine start-up besides reading weights: CUDA init, torch.compile, profiling, CUDA graphs.
ENGINE_INIT_SECONDS = 180
# Weights are downloaded (Hugging Face) or streamed at this rate unless the user says otherwise.
DEFAULT_LOAD_BANDWIDTH = 400 * MIB
# Scratch space besides the weights: compile caches, logs, tokenizer files.
SCRATCH_BYTES = 10 * GIB
# Drain: endpoints controllers and load balancers need a few seconds to stop routing to a pod.
PRESTOP_SECONDS = 10
SHUTDOWN_TIMEOUT_SECONDS = 60
GRACE_MARGIN_SECONDS = 15


@dataclass(frozen=True)
class PodSizing:
    shm_bytes: int
    cpu_millicores: int
    memory_bytes: int
    ephemeral_bytes: int
    startup_seconds: int
    load_bandwidth: int
    prestop_seconds: int
    shutdown_timeout_seconds: int
    grace_seconds: int
    efa_devices: int
    notes: dict[str, str]


def size_pod(hw: Hardware, gpus_per_pod: int, tp: int, multi_node: bool, checkpoint_bytes: int,
             nodes_per_replica: int, downloads_weights: bool, load_bandwidth: int | None) -> PodSizing:
    notes: dict[str, str] = {}
    shm = min(SHM_MAX, max(SHM_MIN, SHM_PER_RANK * tp))
    notes["shm_size_bytes"] = f"min(16 GiB, max(1 GiB, 2 GiB x TP {tp}))"
    share = gpus_per_pod / hw.gpus_per_node
    if hw.alloc_cpu_millicores:
        cpu = int((hw.alloc_cpu_millicores - DAEMONSET_RESERVE_CPU_M) * share) // 10 * 10
        mem = int((hw.alloc_memory_bytes - DAEMONSET_RESERVE_MEMORY) * share) // MIB * MIB
        notes["cpu_request_millicores"] = (
            f"(allocatable {hw.alloc_cpu_millicores}m - DaemonSet reserve {DAEMONSET_RESERVE_CPU_M}m) x {gpus_per_pod}/{hw.gpus_per_node} GPUs")
        notes["memory_request_bytes"] = (
            f"(allocatable {hw.alloc_memory_bytes / GIB:.1f} GiB - DaemonSet reserve {DAEMONSET_RESERVE_MEMORY / GIB:.0f} GiB) x {gpus_per_pod}/{hw.gpus_per_node} GPUs")
    else:
        # unknown node: ask for what loading needs (shm plus 8 GiB host buffers per rank)
        cpu = 4000 * gpus_per_pod
        mem = shm + 8 * GIB * gpus_per_pod
        notes["cpu_request_millicores"] = f"hardware outside the catalog: 4 vCPU x {gpus_per_pod} GPUs"
        notes["memory_request_bytes"] = f"hardware outside the catalog: shm + 8 GiB x {gpus_per_pod} GPUs"
    per_pod_weights = checkpoint_bytes // nodes_per_replica
    if downloads_weights:
        ephemeral = checkpoint_bytes + SCRATCH_BYTES
        notes["ephemeral_storage_bytes"] = "whole checkpoint downloaded to the node + 10 GiB scratch"
    else:
        ephemeral = SCRATCH_BYTES
        notes["ephemeral_storage_bytes"] = "weights streamed or mounted, 10 GiB scratch"
    bw = load_bandwidth or DEFAULT_LOAD_BANDWIDTH
    # a download is read twice (network to disk, then disk to GPU); streaming reads once
    passes = 2 if downloads_weights else 1
    load = passes * (checkpoint_bytes if downloads_weights else per_pod_weights) / bw
    startup = int(math.ceil((load + ENGINE_INIT_SECONDS) / 30.0) * 30)
    notes["startup_probe_seconds"] = (
        f"{passes} x {(checkpoint_bytes if downloads_weights else per_pod_weights) / GIB:.1f} GiB / {bw / MIB:.0f} MiB/s "
        f"+ {ENGINE_INIT_SECONDS} s engine init, rounded up to 30 s")
    grace = PRESTOP_SECONDS + SHUTDOWN_TIMEOUT_SECONDS + GRACE_MARGIN_SECONDS
    notes["termination_grace_period_seconds"] = (
        f"preStop {PRESTOP_SECONDS} s + --shutdown-timeout {SHUTDOWN_TIMEOUT_SECONDS} s + {GRACE_MARGIN_SECONDS} s margin")
    efa = hw.efa_max if multi_node else 0
    notes["efa_devices_per_pod"] = (f"instance maximum {hw.efa_max} (multi-node)" if multi_node
                                    else "single node: no cross-node traffic")
    return PodSizing(shm, cpu, mem, ephemeral, startup, bw, PRESTOP_SECONDS, SHUTDOWN_TIMEOUT_SECONDS,
                     grace, efa, notes)

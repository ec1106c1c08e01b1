"""Pod-level numbers that follow from the memory plan: /dev/shm, CPU and memory requests,
ephemeral storage, probe and drain timings, EFA devices."""

from __future__ import annotations

import math

from .derivations import Derivations
from .hardware import Hardware
from .plan import PodPlan
from .units import GIB, MIB, gib, gib_exact

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
STARTUP_ROUNDING_SECONDS = 30
# Weights are downloaded (Hugging Face) or streamed at this rate unless the user says otherwise.
DEFAULT_LOAD_BANDWIDTH = 400 * MIB
# Scratch space besides the weights: compile caches, logs, tokenizer files.
SCRATCH_BYTES = 10 * GIB
# Drain: endpoints controllers and load balancers need a few seconds to stop routing to a pod.
PRESTOP_SECONDS = 10
SHUTDOWN_TIMEOUT_SECONDS = 60
GRACE_MARGIN_SECONDS = 15
# Hardware outside the catalog has no allocatable figures: ask for what loading needs.
UNKNOWN_NODE_CPU_M_PER_GPU = 4000
UNKNOWN_NODE_MEMORY_PER_GPU = 8 * GIB


def size_pod(hw: Hardware, gpus_per_pod: int, tp: int, multi_node: bool, checkpoint_bytes: int,
             nodes_per_replica: int, downloads_weights: bool, load_bandwidth: int | None) -> PodPlan:
    """The pod section of the Plan, with a derivation for each number."""
    d = Derivations()
    shm = min(SHM_MAX, max(SHM_MIN, SHM_PER_RANK * tp))
    d.add("shm_size_bytes", gib(shm), f"min({gib_exact(SHM_MAX)}, max({gib_exact(SHM_MIN)}, {gib_exact(SHM_PER_RANK)} x TP {tp}))")
    cpu, mem = _cpu_and_memory(d, hw, gpus_per_pod, shm)
    per_pod_weights = checkpoint_bytes // nodes_per_replica
    if downloads_weights:
        ephemeral = checkpoint_bytes + SCRATCH_BYTES
        why = f"whole checkpoint downloaded to the node + {gib_exact(SCRATCH_BYTES)} scratch"
    else:
        ephemeral = SCRATCH_BYTES
        why = f"weights streamed or mounted, {gib_exact(SCRATCH_BYTES)} scratch"
    d.add("ephemeral_storage_bytes", gib(ephemeral), why)
    bw = load_bandwidth or DEFAULT_LOAD_BANDWIDTH
    # a download is read twice (network to disk, then disk to GPU); streaming reads once
    passes = 2 if downloads_weights else 1
    read = checkpoint_bytes if downloads_weights else per_pod_weights
    startup = int(math.ceil((passes * read / bw + ENGINE_INIT_SECONDS) / STARTUP_ROUNDING_SECONDS)
                  * STARTUP_ROUNDING_SECONDS)
    d.add("startup_probe_seconds", f"{startup} s",
          f"{passes} x {read / GIB:.1f} GiB / {bw / MIB:.0f} MiB/s + {ENGINE_INIT_SECONDS} s engine init, "
          f"rounded up to {STARTUP_ROUNDING_SECONDS} s")
    grace = PRESTOP_SECONDS + SHUTDOWN_TIMEOUT_SECONDS + GRACE_MARGIN_SECONDS
    d.add("termination_grace_period_seconds", f"{grace} s",
          f"preStop {PRESTOP_SECONDS} s + --shutdown-timeout {SHUTDOWN_TIMEOUT_SECONDS} s + {GRACE_MARGIN_SECONDS} s margin")
    efa = hw.efa_max if multi_node else 0
    d.add("efa_devices_per_pod", str(efa), f"instance maximum {hw.efa_max} (multi-node)" if multi_node
          else "single node: no cross-node traffic")
    return PodPlan(shm_size_bytes=shm, efa_devices_per_pod=efa, cpu_request_millicores=cpu, memory_request_bytes=mem,
                   ephemeral_storage_bytes=ephemeral, load_bandwidth_bytes_per_s=bw, startup_probe_seconds=startup,
                   shutdown_timeout_seconds=SHUTDOWN_TIMEOUT_SECONDS, prestop_seconds=PRESTOP_SECONDS,
                   termination_grace_period_seconds=grace, derivations=d.items)


def _cpu_and_memory(d: Derivations, hw: Hardware, gpus_per_pod: int, shm: int) -> tuple[int, int]:
    """The pod's share of node allocatable after the DaemonSet reserve, by its share of the GPUs."""
    if not hw.alloc_cpu_millicores:
        # unknown node: ask for what loading needs (shm plus host buffers per rank)
        cpu = UNKNOWN_NODE_CPU_M_PER_GPU * gpus_per_pod
        mem = shm + UNKNOWN_NODE_MEMORY_PER_GPU * gpus_per_pod
        d.add("cpu_request_millicores", f"{cpu}m",
              f"hardware outside the catalog: {UNKNOWN_NODE_CPU_M_PER_GPU // 1000} vCPU x {gpus_per_pod} GPUs")
        d.add("memory_request_bytes", gib(mem),
              f"hardware outside the catalog: shm + {gib_exact(UNKNOWN_NODE_MEMORY_PER_GPU)} x {gpus_per_pod} GPUs")
        return cpu, mem
    share = gpus_per_pod / hw.gpus_per_node
    cpu = int((hw.alloc_cpu_millicores - DAEMONSET_RESERVE_CPU_M) * share) // 10 * 10
    mem = int((hw.alloc_memory_bytes - DAEMONSET_RESERVE_MEMORY) * share) // MIB * MIB
    d.add("cpu_request_millicores", f"{cpu}m",
          f"(allocatable {hw.alloc_cpu_millicores}m - DaemonSet reserve {DAEMONSET_RESERVE_CPU_M}m) x "
          f"{gpus_per_pod}/{hw.gpus_per_node} GPUs")
    d.add("memory_request_bytes", gib(mem),
          f"(allocatable {hw.alloc_memory_bytes / GIB:.1f} GiB - DaemonSet reserve {DAEMONSET_RESERVE_MEMORY / GIB:.0f} GiB) x "
          f"{gpus_per_pod}/{hw.gpus_per_node} GPUs")
    return cpu, mem

"""Pod-level numbers that follow from the memory plan: /dev/shm, CPU and memory requests,
ephemeral storage, probe and drain timings, EFA devices."""

from __future__ import annotations

import math
from dataclasses import dataclass

from vllm_eks.catalog.instances import Hardware
from vllm_eks.core.derivations import Derivations
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB, MIB, gib, gib_exact, parse_quantity
from vllm_eks.planning.model_source import LoadSource
from vllm_eks.spec.plan import PodPlan


@dataclass(frozen=True)
class DaemonSetFootprint:
    """Requests of one DaemonSet pod a GPU node of an EKS cluster typically runs."""
    name: str
    cpu_millicores: int
    memory_bytes: int
    source: str


# The DaemonSets charts/gpu-infra installs: these requests are its values' defaults, and the
# reserve below counts them, so both read them from here.
NVIDIA_DEVICE_PLUGIN = DaemonSetFootprint("nvidia-device-plugin", 50, 64 * MIB, "charts/gpu-infra values")
EFA_DEVICE_PLUGIN = DaemonSetFootprint("efa-device-plugin", 10, 32 * MIB, "charts/gpu-infra values")
DCGM_EXPORTER = DaemonSetFootprint("dcgm-exporter", 100, 512 * MIB, "charts/gpu-infra values")

# What a GPU node typically runs besides the model server, with the requests upstream manifests
# set (where a pod sets no memory request, its usual working set, so the node keeps room for it).
TYPICAL_GPU_NODE_DAEMONSETS = (
    DaemonSetFootprint("aws-node (VPC CNI + network policy agent)", 50, 128 * MIB,
                       "aws/amazon-vpc-cni-k8s charts/aws-vpc-cni values: 25m each container, no memory request"),
    DaemonSetFootprint("kube-proxy", 100, 64 * MIB, "EKS kube-proxy add-on: 100m, no memory request"),
    DaemonSetFootprint("ebs-csi-node", 30, 120 * MIB,
                       "kubernetes-sigs/aws-ebs-csi-driver chart: 10m/40Mi for the plugin and each of two sidecars"),
    DaemonSetFootprint("eks-pod-identity-agent", 25, 64 * MIB, "EKS add-on sets none: small Go agent"),
    NVIDIA_DEVICE_PLUGIN,
    EFA_DEVICE_PLUGIN,
    DCGM_EXPORTER,
    DaemonSetFootprint("node-exporter", 100, 128 * MIB, "prometheus-node-exporter chart sets none: a usual setting"),
    DaemonSetFootprint("fluent-bit (log shipper)", 500, 100 * MIB,
                       "aws-samples/amazon-cloudwatch-container-insights fluent-bit DaemonSet: 500m/100Mi"),
    DaemonSetFootprint("cloudwatch-agent", 200, 200 * MIB,
                       "aws-samples/amazon-cloudwatch-container-insights cwagent DaemonSet: 200m/200Mi"),
)
# The default reserve: the list above (1,165m and 1.4 GiB) rounded up with room for an agent or two
# it does not name (a security or APM agent), so one more DaemonSet does not leave the model
# server Pending. Set per cluster with --daemonset-reserve-cpu / --daemonset-reserve-memory.
DEFAULT_DAEMONSET_RESERVE_CPU_M = 2000
DEFAULT_DAEMONSET_RESERVE_MEMORY = 4 * GIB
# /dev/shm: NCCL and vLLM's shared-memory broadcast between ranks; 2 GiB per rank, capped.
SHM_PER_RANK = 2 * GIB
SHM_MAX = 16 * GIB
SHM_MIN = 1 * GIB
# Engine start-up besides reading weights: CUDA init, torch.compile, profiling, CUDA graphs.
ENGINE_INIT_SECONDS = 180
# The same on a warm cache: vLLM loads the compiled graphs from VLLM_CACHE_ROOT/torch_compile_cache
# ("Directly load the compiled graph(s) ... from the cache", vllm/compilation/backends.py) instead
# of compiling; CUDA init, memory profiling and CUDA graph capture still run at every start.
WARM_ENGINE_INIT_SECONDS = 90
# Read rate of the cache volume per --cache, unless --cache-read-mib-s says otherwise:
# pvc: gp3's baseline 125 MiB/s, the slowest usual claim (EFS, FSx for Lustre and provisioned gp3
# read faster: give their rate); instance-store: one NVMe instance-store disk reads well above
# 1 GiB/s, the RAID0 array more; emptydir: the node's root volume (a container restart in the same
# pod finds the emptyDir again), gp3 at the throughput gpu-infra provisions (pools.py GP3_MAXIMUM).
CACHE_READ_MIB_S = {"pvc": 125, "instance-store": 1000, "emptydir": 1000}
STARTUP_ROUNDING_SECONDS = 30
# Scratch space besides the weights: compile caches, logs, tokenizer files.
SCRATCH_BYTES = 10 * GIB
# Drain: endpoints controllers and load balancers need a few seconds to stop routing to a pod.
PRESTOP_SECONDS = 10
SHUTDOWN_TIMEOUT_SECONDS = 60
GRACE_MARGIN_SECONDS = 15
# Host memory one vLLM rank needs besides /dev/shm (loading buffers, the tokenizer, the Python
# process): what a pod asks for on hardware outside the catalog, and the least a pod's share of a
# known node must leave it.
ENGINE_HOST_MEMORY_PER_GPU = 8 * GIB
# Hardware outside the catalog has no allocatable figures: ask for what loading needs.
UNKNOWN_NODE_CPU_M_PER_GPU = 4000


def size_pod(hw: Hardware, gpus_per_pod: int, tp: int, multi_node: bool, checkpoint_bytes: int,
             nodes_per_replica: int, load: LoadSource,
             reserve: tuple[str | None, str | None] = (None, None), cache: str = "emptydir",
             cache_read: int | None = None, host_kv_buffer: int = 0, host_kv_offload: int = 0) -> PodPlan:
    """The pod section of the Plan, with a derivation for each number. `load` is the model
    source with its load bandwidth (model_source.py); `reserve` is the DaemonSet reserve as given
    (--daemonset-reserve-cpu, --daemonset-reserve-memory); `cache` and `cache_read` are --cache
    and --cache-read-mib-s (bytes/s); `host_kv_buffer` the bytes of NIXL's host copy of the KV
    cache a disaggregated engine pod holds (planning/kv_transfer.py), 0 elsewhere;
    `host_kv_offload` the bytes of vLLM's KV offload buffer in the pod's /dev/shm
    (planning/kv_offload.py), 0 without --kv-offload-gib."""
    downloads_weights = load.downloads
    d = Derivations()
    shm = min(SHM_MAX, max(SHM_MIN, SHM_PER_RANK * tp)) + host_kv_offload
    d.add("shm_size_bytes", gib(shm),
          f"min({gib_exact(SHM_MAX)}, max({gib_exact(SHM_MIN)}, {gib_exact(SHM_PER_RANK)} x TP {tp}))"
          + (f" + KV offload buffer {gib(host_kv_offload)}" if host_kv_offload else ""),
          "vLLM creates its KV offload buffer as a file in /dev/shm after checking the free space"
          if host_kv_offload else "")
    reserve_cpu, reserve_mem = daemonset_reserve(d, hw, *reserve)
    cpu, mem = _cpu_and_memory(d, hw, gpus_per_pod, shm, reserve_cpu, reserve_mem, host_kv_buffer,
                               host_kv_offload)
    per_pod_weights = checkpoint_bytes // nodes_per_replica
    if downloads_weights and cache == "pvc":
        ephemeral = SCRATCH_BYTES
        why = f"checkpoint downloaded to the cache claim (--cache pvc), {gib_exact(SCRATCH_BYTES)} scratch"
    elif downloads_weights:
        ephemeral = checkpoint_bytes + SCRATCH_BYTES
        why = f"whole checkpoint downloaded to the node + {gib_exact(SCRATCH_BYTES)} scratch"
    else:
        ephemeral = SCRATCH_BYTES
        why = f"weights streamed or mounted, {gib_exact(SCRATCH_BYTES)} scratch"
    d.add("ephemeral_storage_bytes", gib(ephemeral), why)
    cache_volume = (checkpoint_bytes if downloads_weights else 0) + SCRATCH_BYTES
    d.add("cache_volume_bytes", gib(cache_volume),
          (f"whole checkpoint ({gib(checkpoint_bytes)}, the Hugging Face download) + " if downloads_weights
           else "weights streamed or mounted, not cached: ") + f"{gib_exact(SCRATCH_BYTES)} compile caches and scratch",
          "size of a claim the chart creates for --cache pvc")
    bw = load.bandwidth
    d.add("load_bandwidth_bytes_per_s", f"{bw / MIB:.0f} MiB/s", load.basis,
          f"--model-source-kind {load.kind}: " + ("downloaded to the cache volume, then read" if downloads_weights
                                                  else "read by vLLM from the source"))
    # a download is read twice (network to disk, then disk to GPU); streaming reads once
    passes = 2 if downloads_weights else 1
    read = checkpoint_bytes if downloads_weights else per_pod_weights
    cold = _round_up(passes * read / bw + ENGINE_INIT_SECONDS)
    d.add("cold_startup_seconds", f"{cold} s",
          f"{passes} x {read / GIB:.1f} GiB / {bw / MIB:.0f} MiB/s + {ENGINE_INIT_SECONDS} s engine init "
          f"(compilation, profiling, CUDA graphs), rounded up to {STARTUP_ROUNDING_SECONDS} s",
          "nothing cached: " + ("download to the cache volume, then read into the GPUs" if downloads_weights
                                else "weights streamed or read from their volume"))
    cache_bw = cache_read or CACHE_READ_MIB_S[cache] * MIB
    d.add("cache_read_bytes_per_s", f"{cache_bw / MIB:.0f} MiB/s",
          "set by --cache-read-mib-s" if cache_read
          else f"default for --cache {cache} (pod_resources.py CACHE_READ_MIB_S)")
    if downloads_weights:
        warm_read, warm_bw, warm_why = checkpoint_bytes, cache_bw, "weights read once from the Hugging Face cache"
    else:
        warm_read, warm_bw, warm_why = read, bw, "weights streamed or read from their volume as at a cold start"
    warm = _round_up(warm_read / warm_bw + WARM_ENGINE_INIT_SECONDS)
    kept = {"pvc": "kept by the claim across pod restarts and reschedules",
            "instance-store": "kept on the node's NVMe across container restarts, lost when the pod is replaced",
            "emptydir": "kept across container restarts in the same pod only"}[cache]
    d.add("warm_startup_seconds", f"{warm} s",
          f"{warm_read / GIB:.1f} GiB / {warm_bw / MIB:.0f} MiB/s + {WARM_ENGINE_INIT_SECONDS} s engine init "
          f"(compiled graphs loaded from VLLM_CACHE_ROOT), rounded up to {STARTUP_ROUNDING_SECONDS} s",
          f"{warm_why}; the cache is {kept}")
    startup = cold
    d.add("startup_probe_seconds", f"{startup} s", "the cold start-up, whatever the cache",
          "a first start on a new claim or node, or after an upgrade that changes vLLM's compile cache key, is "
          "cold; a warm budget would kill it before it fills the cache")
    grace = PRESTOP_SECONDS + SHUTDOWN_TIMEOUT_SECONDS + GRACE_MARGIN_SECONDS
    d.add("termination_grace_period_seconds", f"{grace} s",
          f"preStop {PRESTOP_SECONDS} s + --shutdown-timeout {SHUTDOWN_TIMEOUT_SECONDS} s "
          f"+ {GRACE_MARGIN_SECONDS} s margin")
    efa = hw.efa_max if multi_node else 0
    d.add("efa_devices_per_pod", str(efa), f"instance maximum {hw.efa_max} (multi-node)" if multi_node
          else "single node: no cross-node traffic")
    return PodPlan(shm_size_bytes=shm, efa_devices_per_pod=efa, cpu_request_millicores=cpu, memory_request_bytes=mem,
                   daemonset_reserve_cpu_millicores=reserve_cpu, daemonset_reserve_memory_bytes=reserve_mem,
                   ephemeral_storage_bytes=ephemeral, load_bandwidth_bytes_per_s=bw, model_source_kind=load.kind,
                   cache=cache,
                   cache_read_bytes_per_s=cache_bw, cache_volume_bytes=cache_volume, cold_startup_seconds=cold,
                   warm_startup_seconds=warm,
                   startup_probe_seconds=startup,
                   shutdown_timeout_seconds=SHUTDOWN_TIMEOUT_SECONDS, prestop_seconds=PRESTOP_SECONDS,
                   termination_grace_period_seconds=grace, derivations=d.items)


def _round_up(seconds: float) -> int:
    return int(math.ceil(seconds / STARTUP_ROUNDING_SECONDS) * STARTUP_ROUNDING_SECONDS)


def daemonset_reserve(d: Derivations, hw: Hardware, cpu: str | None, memory: str | None) -> tuple[int, int]:
    """The DaemonSet reserve in millicores and bytes: the flags, else the defaults; it must leave
    part of the node's allocatable to the model server."""
    reserve_cpu = _quantity("--daemonset-reserve-cpu", cpu, 1000, "e.g. 2 or 1500m")
    reserve_mem = _quantity("--daemonset-reserve-memory", memory, 1, "e.g. 4Gi or 3500Mi")
    reserve_cpu = DEFAULT_DAEMONSET_RESERVE_CPU_M if reserve_cpu is None else reserve_cpu
    reserve_mem = DEFAULT_DAEMONSET_RESERVE_MEMORY if reserve_mem is None else reserve_mem
    for flag, value, alloc, show in (
            ("--daemonset-reserve-cpu", reserve_cpu, hw.alloc_cpu_millicores, lambda n: f"{n}m"),
            ("--daemonset-reserve-memory", reserve_mem, hw.alloc_memory_bytes, gib)):
        if alloc and value >= alloc:
            raise InvalidOptionError(f"{flag} {show(value)}: must be less than the allocatable {show(alloc)} "
                                     f"of one {hw.name} node")
    items = ", ".join(f"{x.name} {x.cpu_millicores}m/{x.memory_bytes // MIB}Mi" for x in TYPICAL_GPU_NODE_DAEMONSETS)
    given = "set by flag" if cpu is not None else "default"
    d.add("daemonset_reserve_cpu_millicores", f"{reserve_cpu}m", f"{given}; default {DEFAULT_DAEMONSET_RESERVE_CPU_M}m",
          f"requests of a typical EKS GPU node's DaemonSets ({items}) rounded up with room for one more agent")
    d.add("daemonset_reserve_memory_bytes", gib(reserve_mem),
          f"{'set by flag' if memory is not None else 'default'}; "
          f"default {gib_exact(DEFAULT_DAEMONSET_RESERVE_MEMORY)}",
          "same DaemonSets as the CPU reserve")
    return reserve_cpu, reserve_mem


def _quantity(flag: str, value: str | None, scale: int, example: str) -> int | None:
    """A Kubernetes quantity flag as an integer (millicores with scale 1000, bytes with 1)."""
    if value is None:
        return None
    try:
        q = parse_quantity(value)
    except ValueError:
        raise InvalidOptionError(f"{flag} {value!r}: not a Kubernetes quantity ({example})") from None
    if q < 0:
        raise InvalidOptionError(f"{flag} {value!r}: must be >= 0 ({example})")
    return int(q * scale)


def _cpu_and_memory(d: Derivations, hw: Hardware, gpus_per_pod: int, shm: int,
                    reserve_cpu: int, reserve_mem: int, host_kv_buffer: int,
                    host_kv_offload: int = 0) -> tuple[int, int]:
    """The pod's share of node allocatable after the DaemonSet reserve, by its share of the GPUs;
    refused when that share cannot hold what the pod needs in host memory (shm, which holds the
    KV offload buffer, the engine's own host buffers per rank and NIXL's host copy of the KV
    cache)."""
    need = shm + ENGINE_HOST_MEMORY_PER_GPU * gpus_per_pod + host_kv_buffer
    kv_term = f" + NIXL host KV buffer {gib(host_kv_buffer)}" if host_kv_buffer else ""
    shm_term = f"shm {gib(shm)}" + (f" with the KV offload buffer {gib(host_kv_offload)}" if host_kv_offload else "")
    checked = bool(host_kv_buffer or host_kv_offload)
    if not hw.alloc_cpu_millicores:
        # unknown node: ask for what the pod needs
        cpu = UNKNOWN_NODE_CPU_M_PER_GPU * gpus_per_pod
        d.add("cpu_request_millicores", f"{cpu}m",
              f"hardware outside the catalog: {UNKNOWN_NODE_CPU_M_PER_GPU // 1000} vCPU x {gpus_per_pod} GPUs",
              "a default, not the node's allocatable: give --vcpus and --memory-gib to derive it")
        d.add("memory_request_bytes", gib(need),
              f"hardware outside the catalog: {shm_term} + {gib_exact(ENGINE_HOST_MEMORY_PER_GPU)} x "
              f"{gpus_per_pod} GPUs" + kv_term,
              "a default, not the node's allocatable: give --vcpus and --memory-gib to derive it")
        return cpu, need
    share = gpus_per_pod / hw.gpus_per_node
    cpu = int((hw.alloc_cpu_millicores - reserve_cpu) * share) // 10 * 10
    mem = int((hw.alloc_memory_bytes - reserve_mem) * share) // MIB * MIB
    d.add("cpu_request_millicores", f"{cpu}m",
          f"(allocatable {hw.alloc_cpu_millicores}m - DaemonSet reserve {reserve_cpu}m) x "
          f"{gpus_per_pod}/{hw.gpus_per_node} GPUs")
    if checked and need > mem:
        # checked only where a host KV buffer adds to the pod (other pods were sized as before)
        flag = (f"--kv-offload-gib {host_kv_offload / GIB:g} on {hw.name}" if host_kv_offload
                else f"--instance {hw.name}")
        # the largest buffer that fits, rounded down to what the message shows
        room = math.floor(max(0, host_kv_offload - (need - mem)) / GIB * 100) / 100
        fixes = [f"lower --kv-offload-gib (at most {room:.2f} GiB fits)"
                 if host_kv_offload else "",
                 "choose an instance with more memory per GPU",
                 "one with GPUDirect RDMA (no host KV buffer)" if host_kv_buffer else ""]
        raise InvalidOptionError(
            f"{flag}: an engine pod needs {gib(need)} of host memory ({shm_term} + "
            f"{gib_exact(ENGINE_HOST_MEMORY_PER_GPU)} x {gpus_per_pod} GPUs{kv_term}) and its share of the node "
            f"allocatable is {gib(mem)}: " + " or ".join(f for f in fixes if f))
    d.add("memory_request_bytes", gib(mem),
          f"(allocatable {hw.alloc_memory_bytes / GIB:.1f} GiB - DaemonSet reserve {reserve_mem / GIB:.1f} GiB) x "
          f"{gpus_per_pod}/{hw.gpus_per_node} GPUs"
          + (f"; holds {shm_term} + {gib_exact(ENGINE_HOST_MEMORY_PER_GPU)} x {gpus_per_pod} GPUs{kv_term} "
             f"= {gib(need)}" if checked else ""))
    return cpu, mem

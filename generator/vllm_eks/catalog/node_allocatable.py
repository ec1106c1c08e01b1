"""What a GPU node leaves for pods: allocatable CPU, memory and max pods, computed the way
Karpenter v1 computes them for an EKS AL2023 node before it launches one (so a pod sized from
these figures is one Karpenter agrees fits).

Sources (aws/karpenter-provider-aws v1.14.1):
- `pkg/providers/instancetype/types.go`: memory capacity is EC2's `MemoryInfo.SizeInMiB` less
  `vmMemoryOverheadPercent` (default 0.075, `--vm-memory-overhead-percent`), rounded up to a
  whole MiB; kube-reserved CPU is 6 % of the first core, 1 % of the second, 0.5 % of the third
  and fourth and 0.25 % of every core above four; kube-reserved memory is 11 MiB per pod plus
  255 MiB; the hard eviction threshold `memory.available` is 100 MiB; max pods, without
  `kubelet.maxPods` or prefix delegation, is ENI-limited: the default network card's maximum
  network interfaces x (IPv4 addresses per interface - 1) + 2.
- The same figures are in the EKS AMI's `eni-max-pods.txt` and kube-reserved rules, which
  Karpenter mirrors; its generated `website/content/en/v1.14/reference/instance-types.md` lists
  the result per type, and a unit test recomputes every catalog row against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vllm_eks.core.errors import InvalidOptionError

VM_MEMORY_OVERHEAD_PERCENT = 0.075
EVICTION_HARD_MEMORY_MIB = 100
KUBE_RESERVED_MEMORY_BASE_MIB = 255
KUBE_RESERVED_MEMORY_PER_POD_MIB = 11
# (cores in this band, millicores reserved per core): 6 %, 1 %, 0.5 %, then 0.25 % of a core.
_CPU_BANDS = ((1, 60.0), (1, 10.0), (2, 5.0), (math.inf, 2.5))

FORMULA = ("Karpenter v1 / EKS AL2023: max pods = ENIs x (IPv4 per ENI - 1) + 2; "
           "CPU = vCPUs - kube-reserved (6 % of core 1, 1 % of core 2, 0.5 % of cores 3-4, 0.25 % above); "
           "memory = MiB - ceil(7.5 % VM overhead) - (11 MiB x max pods + 255 MiB) kube-reserved - 100 MiB eviction")


@dataclass(frozen=True)
class Allocatable:
    cpu_millicores: int
    memory_mib: int
    max_pods: int


def eni_max_pods(max_network_interfaces: int, ipv4_per_interface: int) -> int:
    """Pods the VPC CNI can address without prefix delegation: each ENI's primary address is the
    node's own, and two host-network pods (kube-proxy, aws-node) need none."""
    return max_network_interfaces * (ipv4_per_interface - 1) + 2


def kube_reserved_cpu_millicores(vcpus: int) -> int:
    reserved, left = 0.0, float(vcpus)
    for cores, per_core in _CPU_BANDS:
        take = min(left, cores)
        reserved += take * per_core
        left -= take
        if left <= 0:
            break
    return int(reserved)


def vm_memory_mib(memory_mib: int, overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT) -> int:
    """Memory Karpenter expects the kernel to report: EC2's figure less the hypervisor overhead."""
    return memory_mib - math.ceil(memory_mib * overhead_percent)


def allocatable(vcpus: int, memory_mib: int, max_network_interfaces: int, ipv4_per_interface: int,
                max_pods: int | None = None) -> Allocatable:
    """Node allocatable from an instance type's shape. `max_pods` overrides the ENI limit (a
    kubelet `maxPods`); kube-reserved memory follows the pod count either way."""
    if vcpus <= 0 or memory_mib <= 0:
        raise InvalidOptionError(f"an instance needs vCPUs and memory above 0 (got {vcpus} vCPUs, {memory_mib} MiB)")
    if max_pods is None:
        if max_network_interfaces <= 0 or ipv4_per_interface <= 1:
            raise InvalidOptionError(
                f"max pods needs at least one ENI with two IPv4 addresses (got {max_network_interfaces} ENIs, "
                f"{ipv4_per_interface} addresses each)")
        max_pods = eni_max_pods(max_network_interfaces, ipv4_per_interface)
    cpu = vcpus * 1000 - kube_reserved_cpu_millicores(vcpus)
    reserved = KUBE_RESERVED_MEMORY_PER_POD_MIB * max_pods + KUBE_RESERVED_MEMORY_BASE_MIB
    memory = vm_memory_mib(memory_mib) - reserved - EVICTION_HARD_MEMORY_MIB
    return Allocatable(cpu_millicores=cpu, memory_mib=memory, max_pods=max_pods)

"""Instance catalog (figures from the project's instances.csv, sources in instances.sources.md) and
the GPU memory CUDA reports. Node allocatable is computed from each type's shape with Karpenter's
formula (node_allocatable.py), not read from a table."""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import yaml

from vllm_eks.catalog import node_allocatable
from vllm_eks.catalog.gpudirect import supports_gpudirect_rdma
from vllm_eks.catalog.node_allocatable import allocatable
from vllm_eks.core.derivations import Derivations
from vllm_eks.core.errors import InvalidOptionError, UnknownInstanceError
from vllm_eks.core.units import MIB, gib
from vllm_eks.spec.plan import NodePlan


@dataclass(frozen=True)
class Hardware:
    name: str
    gpu: str
    gpus_per_node: int
    gpu_memory_mib_nvidia_smi: int
    gpu_memory_bytes: int          # what CUDA reports as total: vLLM's budget starts here
    gpu_memory_source: str
    interconnect: str
    vcpu: int
    memory_mib: int
    alloc_cpu_millicores: int
    alloc_memory_bytes: int
    max_pods: int
    efa_max: int
    network_mbps: int
    local_nvme_gb: int
    usd_per_hour: float | None
    in_catalog: bool = True
    gpu_memory_mib_ec2: int | None = None  # GpuInfo.MemoryInfo.SizeInMiB, as EC2 reports it
    price_date: str | None = None          # when the on-demand price was read (ISO date)
    bf16_tflops: float | None = None       # datasheet dense BF16 tensor throughput of one GPU
    memory_bandwidth: float | None = None  # datasheet memory bandwidth of one GPU, bytes/s
    compute_capability: tuple[int, int] | None = None  # CUDA compute capability; None: unknown (custom)
    shape_source: str = ""   # where vCPUs, memory and allocatable came from, outside the catalog (catalog/ec2.py)
    price_source: str = ""   # where usd_per_hour came from, when not the catalog's us-east-1 figure

    @property
    def gpudirect_rdma(self) -> bool:
        """EFA reads and writes this type's GPU memory directly (a rule by family: catalog/gpudirect.py)."""
        return supports_gpudirect_rdma(self.name)


@lru_cache(maxsize=1)
def _gpu_facts() -> dict[tuple[str, int], dict]:
    data = yaml.safe_load(resources.files(__package__).joinpath("data/gpus.yaml").read_text())
    return {(g["karpenter_gpu_name"], int(g["nvidia_smi_mib"])): g for g in (data.get("gpus") or {}).values()}


def _gpu_totals() -> dict[tuple[str, int], tuple[int | None, str]]:
    return {k: (g.get("cuda_total_bytes"), g.get("cuda_total_source", "")) for k, g in _gpu_facts().items()}


def driver_reservation_bytes() -> int:
    """nvidia-smi total minus CUDA total, the largest seen on GPUs that have both figures: what
    to subtract for a GPU whose CUDA total is not known."""
    seen = [smi * MIB - cuda for (_, smi), (cuda, _) in _gpu_totals().items() if cuda]
    return max(seen) if seen else 512 * MIB


def cuda_total_bytes(gpu: str, nvidia_smi_mib: int) -> tuple[int, str]:
    cuda, source = _gpu_totals().get((gpu, nvidia_smi_mib), (None, ""))
    if cuda:
        return int(cuda), source
    reserve = driver_reservation_bytes()
    return (nvidia_smi_mib * MIB - reserve,
            f"nvidia-smi {nvidia_smi_mib} MiB minus the {reserve / MIB:.0f} MiB driver reservation "
            "seen on catalogued GPUs")


def _speed(gpu: str, smi_mib: int) -> dict:
    g = _gpu_facts().get((gpu, smi_mib)) or {}
    tflops, bw = g.get("bf16_dense_tflops"), g.get("memory_bandwidth_gb_s")
    cc = g.get("compute_capability")
    return {"bf16_tflops": float(tflops) if tflops else None,
            "memory_bandwidth": float(bw) * 1e9 if bw else None,
            "compute_capability": tuple(int(x) for x in str(cc).split(".")) if cc else None}


@lru_cache(maxsize=1)
def instance_catalog() -> dict[str, Hardware]:
    text = resources.files(__package__).joinpath("data/instances.csv").read_text()
    out: dict[str, Hardware] = {}
    for row in csv.DictReader(text.splitlines()):
        if not row["gpu_mem_mib_nvidia_smi"]:
            continue  # Trainium / Inferentia: no CUDA GPUs, vLLM's CUDA sizing does not apply
        smi = int(row["gpu_mem_mib_nvidia_smi"])
        total, source = cuda_total_bytes(row["gpu"], smi)
        node = allocatable(int(row["vcpu"]), int(row["mem_mib"]), int(row["max_enis"]), int(row["ipv4_per_eni"]))
        out[row["instance"]] = Hardware(
            name=row["instance"], gpu=row["gpu"], gpus_per_node=int(row["gpu_count"]),
            gpu_memory_mib_nvidia_smi=smi, gpu_memory_bytes=total, gpu_memory_source=source,
            interconnect=row["interconnect"], vcpu=int(row["vcpu"]), memory_mib=int(row["mem_mib"]),
            alloc_cpu_millicores=node.cpu_millicores, alloc_memory_bytes=node.memory_mib * MIB,
            max_pods=node.max_pods,
            efa_max=int(row["efa_max"]), network_mbps=int(row["net_mbps_baseline"]),
            local_nvme_gb=int(row["local_nvme_gb"] or 0),
            usd_per_hour=float(row["usd_hr_us_east_1"]) if row["usd_hr_us_east_1"] else None,
            price_date=row["price_date"] or None,
            gpu_memory_mib_ec2=int(row["gpu_mem_mib_ec2"]) if row["gpu_mem_mib_ec2"] else None,
            **_speed(row["gpu"], smi),
        )
    return out


# EC2 instance families the catalog does not model, and why (checked by name before anything else
# says "not in the catalog"). Prefixes match the family part of the type name.
_NOT_MODELLED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("trn", "inf"), "an AWS Neuron (Trainium/Inferentia) instance, not a CUDA GPU instance: "
                     "vLLM's CUDA memory model does not apply"),
    (("dl1", "dl2q"), "a Habana Gaudi / Qualcomm AI 100 instance, not a CUDA GPU instance"),
    (("g4ad",), "an AMD Radeon Pro V520 instance, not a CUDA GPU instance"),
    (("g6f", "gr6f"), "a fractional-GPU type (an eighth to a half of one L4, served through NVIDIA's GRID "
                      "vGPU driver rather than the AMI's datacenter driver): not modelled"),
    (("p6e-gb",), "a Grace Blackwell UltraServer node (arm64 Grace CPUs, GPUs joined across nodes by NVLink, "
                  "sold as UltraServer capacity): not modelled"),
    (("g5g",), "a Graviton (arm64) instance with T4G GPUs: not modelled"),
    (("g7",), "an RTX PRO 4500 Blackwell instance: not modelled yet (no public nvidia-smi or CUDA total for "
               "its GPU, and no on-demand price in the pricing table)"),
    (("p2", "p3", "p3dn", "g3", "g3s"), "a GPU generation before Turing (K80, M60, V100): not modelled"),
)


def unmodelled_reason(instance: str) -> str | None:
    """Why a known EC2 family is refused by name, or None when the name says nothing."""
    family = instance.split(".", 1)[0]
    for prefixes, why in _NOT_MODELLED:
        if any(family == p or (family.startswith(p) and p in ("trn", "inf", "p6e-gb")) for p in prefixes):
            return why
    return None


def supported_families() -> list[str]:
    seen: dict[str, None] = {}
    for name in instance_catalog():
        seen.setdefault(name.split(".", 1)[0], None)
    return list(seen)


def resolve_hardware(instance: str | None, gpu_memory_mib: int | None, gpus_per_node: int | None,
                     hardware_name: str | None, price: float | None, *, region: str | None = None,
                     vcpus: int | None = None, memory_gib: float | None = None,
                     max_pods: int | None = None) -> Hardware:
    """The machine of a plan: a catalog instance (no AWS call), an instance type read from EC2
    (catalog/ec2.py), or custom hardware from flags (with --vcpus/--memory-gib, derived)."""
    if price is not None and price < 0:
        raise InvalidOptionError(f"--price-per-hour must be >= 0, got {price}")
    custom = gpu_memory_mib is not None or gpus_per_node is not None
    if instance and custom:
        raise InvalidOptionError(
            "--instance conflicts with --gpu-memory-mib/--gpus-per-node: "
            "give a catalog instance or custom hardware, not both")
    if instance:
        from vllm_eks.catalog import ec2 as ec2_instances

        catalog = instance_catalog()
        shape_flags = [f for f, v in (("--vcpus", vcpus), ("--memory-gib", memory_gib)) if v is not None]
        if shape_flags:
            raise InvalidOptionError(f"{', '.join(shape_flags)}: only with --gpu-memory-mib/--gpus-per-node (custom "
                                     f"hardware); the shape of --instance {instance} comes from the catalog or EC2")
        if instance not in catalog and (why := unmodelled_reason(instance)):
            raise UnknownInstanceError(
                f"--instance '{instance}' is {why}; vllm-eks plans NVIDIA GPU instances of the families "
                f"{', '.join(supported_families())} (vllm-eks catalog instances)")
        if instance not in catalog:
            return ec2_instances.lookup_instance(instance, region, price, max_pods)
        outside = [f for f, v in (("--region", region), ("--max-pods", max_pods)) if v is not None]
        if outside:
            raise InvalidOptionError(
                f"{', '.join(outside)}: only for hardware outside the catalog; {instance} is in the catalog (its max "
                "pods is the ENI limit, its price us-east-1's: give --price-per-hour for another region)")
        hw = catalog[instance]
        return replace(hw, usd_per_hour=price, price_source="--price-per-hour") if price is not None else hw
    if not custom:
        raise InvalidOptionError(
            "give --instance, or --gpu-memory-mib and --gpus-per-node for hardware outside the catalog")
    if gpu_memory_mib is None or gpu_memory_mib <= 0:
        raise InvalidOptionError(f"--gpu-memory-mib must be a positive number of MiB, got {gpu_memory_mib}")
    if gpus_per_node is None or gpus_per_node <= 0:
        raise InvalidOptionError(f"--gpus-per-node must be a positive integer, got {gpus_per_node}")
    if not hardware_name:
        raise InvalidOptionError(
            "--hardware-name is required with --gpu-memory-mib/--gpus-per-node: the EC2 instance type of "
            "that hardware (e.g. p6-b200.48xlarge), which the GPU pool asks Karpenter for")
    if region is not None:
        raise InvalidOptionError("--region: only with an --instance read from EC2; custom hardware is described by "
                                 "its flags")
    total, source = cuda_total_bytes("custom", gpu_memory_mib)
    from vllm_eks.catalog.ec2 import with_custom_shape

    return with_custom_shape(Hardware(
        name=hardware_name, gpu="custom",
        gpus_per_node=gpus_per_node, gpu_memory_mib_nvidia_smi=gpu_memory_mib, gpu_memory_bytes=total,
        gpu_memory_source=source, interconnect="unknown", vcpu=0, memory_mib=0,
        alloc_cpu_millicores=0, alloc_memory_bytes=0, max_pods=0, efa_max=0, network_mbps=0,
        local_nvme_gb=0, usd_per_hour=price, in_catalog=False,
        price_source="--price-per-hour" if price is not None else ""), vcpus, memory_gib, max_pods)


def node_plan(hw: Hardware, multi_node: bool) -> NodePlan:
    """The node section of the Plan: the GPU machine one pod runs on."""
    d = Derivations()
    if hw.shape_source:
        d.add("node_allocatable", f"{hw.alloc_cpu_millicores}m CPU, {gib(hw.alloc_memory_bytes)}, {hw.max_pods} pods",
              node_allocatable.FORMULA, hw.shape_source)
    elif not hw.in_catalog:
        d.add("node_allocatable", "unknown", "hardware outside the catalog without --vcpus and --memory-gib",
              "the pod's CPU and memory requests are defaults and the EC2 vCPU quota is unknown: give --vcpus and "
              "--memory-gib (and --max-pods, default 110) to derive them")
    d.add("gpu_memory_bytes", gib(hw.gpu_memory_bytes), f"CUDA-visible total of one {hw.gpu}", hw.gpu_memory_source)
    bandwidth = hw.network_mbps / 8000
    if multi_node:
        d.add("expected_bus_bandwidth_gbytes_per_s", f"{bandwidth:g} GB/s",
              f"network rating {hw.network_mbps} Mbit/s / 8000",
              "the all-reduce diagnostic fails far below it: NCCL fell back to TCP")
    return NodePlan(gpu=hw.gpu, gpus_per_node=hw.gpus_per_node, gpu_memory_bytes=hw.gpu_memory_bytes,
                    gpu_interconnect=hw.interconnect, nvlink="nvlink" in hw.interconnect.lower(),
                    expected_bus_bandwidth_gbytes_per_s=bandwidth, derivations=d.items)

"""Hardware outside the catalog, derived rather than guessed: an instance type read from EC2's
own API (DescribeInstanceTypes for the shape, the Price List API for the on-demand price), or a
machine the user describes with --gpu-memory-mib/--gpus-per-node/--hardware-name plus --vcpus and
--memory-gib. Either way node allocatable comes from node_allocatable.py (Karpenter's formula),
so the pod requests, the EC2 vCPU quota and the cost follow from figures, not from defaults.

boto3 is optional (`pip install 'vllm-eks[aws]'`) and imported only when a type is not in the
catalog: a catalog type never calls AWS. Every failure of the lookup (no boto3, no credentials,
no region, access denied, throttling, an unknown type, no network, no price) is one
UnknownInstanceError line naming the flags that get around it.

Sources:
- DescribeInstanceTypes fields (Amazon EC2 API Reference, InstanceTypeInfo): VCpuInfo.DefaultVCpus,
  MemoryInfo.SizeInMiB, GpuInfo.Gpus[].{Name, Manufacturer, Count, MemoryInfo.SizeInMiB},
  NeuronInfo, NetworkInfo.{DefaultNetworkCardIndex, NetworkCards[].MaximumNetworkInterfaces,
  MaximumNetworkInterfaces, Ipv4AddressesPerInterface, EfaInfo.MaximumEfaInterfaces,
  NetworkCards[].BaselineBandwidthInGbps}, InstanceStorageInfo.TotalSizeInGB.
- Karpenter's GPU name label (karpenter.k8s.aws/instance-gpu-name) is EC2's GPU name in lower
  case with spaces as dashes (aws/karpenter-provider-aws pkg/providers/instancetype/types.go),
  which is how data/gpus.yaml keys its GPUs.
- Price List API (AWS Price List Query API, GetProducts): served from us-east-1 (also
  ap-south-1); the AmazonEC2 product attributes instanceType, location, operatingSystem, tenancy,
  preInstalledSw and capacitystatus select one on-demand Linux price; terms.OnDemand.*.
  priceDimensions.*.pricePerUnit.USD is the hourly price and effectiveDate its date.
"""

from __future__ import annotations

import datetime
import json
import os
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from vllm_eks.catalog import instances as hw_mod
from vllm_eks.catalog import node_allocatable
from vllm_eks.core.errors import InvalidOptionError, UnknownInstanceError
from vllm_eks.core.units import MIB
from vllm_eks.spec.request import EC2_INSTANCE_TYPE

# Pods per node when nothing bounds them by ENIs: kubelet's own default maxPods (KubeletConfiguration
# `maxPods`, default 110), which is also the largest Karpenter sets without prefix delegation on
# most types. Custom hardware has no ENI figures; --max-pods sets the kubelet maxPods of its pool.
KUBELET_DEFAULT_MAX_PODS = 110
# The Price List Query API's endpoints (us-east-1 and ap-south-1 serve every region's prices).
PRICING_REGION = "us-east-1"
# Short timeouts and few attempts: a plan must not hang on a network that drops packets.
CONNECT_TIMEOUT_S = 5
READ_TIMEOUT_S = 20
# EC2's answer for a type is kept on disk this long (cache_dir()); instance shapes do not change.
CACHE_MAX_AGE_DAYS = 30
MAX_ATTEMPTS = 3  # in all, the first try included (botocore total_max_attempts)

# Region code -> the Price List API's `location` attribute (the values `aws pricing
# get-attribute-values --service-code AmazonEC2 --attribute-name location` lists). They are
# botocore's region descriptions except Europe, which the price list calls "EU (...)".
LOCATIONS = {
    "us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)", "us-west-2": "US West (Oregon)",
    "ca-central-1": "Canada (Central)", "sa-east-1": "South America (Sao Paulo)",
    "eu-west-1": "EU (Ireland)", "eu-west-2": "EU (London)", "eu-west-3": "EU (Paris)",
    "eu-central-1": "EU (Frankfurt)", "eu-central-2": "EU (Zurich)", "eu-north-1": "EU (Stockholm)",
    "eu-south-1": "EU (Milan)", "eu-south-2": "EU (Spain)",
    "ap-south-1": "Asia Pacific (Mumbai)", "ap-northeast-1": "Asia Pacific (Tokyo)",
    "ap-northeast-2": "Asia Pacific (Seoul)", "ap-northeast-3": "Asia Pacific (Osaka)",
    "ap-southeast-1": "Asia Pacific (Singapore)", "ap-southeast-2": "Asia Pacific (Sydney)",
    "me-central-1": "Middle East (UAE)", "il-central-1": "Israel (Tel Aviv)",
}

_ACCESS_DENIED = {"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"}
_BAD_CREDENTIALS = {"AuthFailure", "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch",
                    "ExpiredToken", "ExpiredTokenException", "RequestExpired"}
_THROTTLED = {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"}


def custom_flags(name: str) -> str:
    """The way around EC2: describe the machine with flags, so nothing is guessed."""
    return (f"describe it with --gpu-memory-mib, --gpus-per-node and --hardware-name {name}, plus --vcpus, "
            "--memory-gib and --price-per-hour so the pod, quota and cost are derived, not guessed")


@dataclass(frozen=True)
class Ec2Shape:
    """The figures of one DescribeInstanceTypes entry the plan uses."""
    name: str
    vcpus: int
    memory_mib: int
    gpu_name: str            # EC2's spelling, e.g. "H100"
    gpu_count: int
    gpu_memory_mib: int      # EC2's per-GPU figure (not nvidia-smi's, not CUDA's)
    max_network_interfaces: int
    ipv4_per_interface: int
    efa_max: int
    network_mbps: int
    local_nvme_gb: int


def shape_from_ec2(info: dict) -> Ec2Shape:
    """An InstanceTypeInfo as DescribeInstanceTypes returns it -> its shape; instance types
    without NVIDIA GPUs are refused in one line."""
    name = info.get("InstanceType", "?")
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    if not gpus:
        neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
        if neuron:
            what = f"{sum(int(d.get('Count', 0)) for d in neuron)} x {neuron[0].get('Name', 'Neuron')} (AWS Neuron)"
        elif (info.get("InferenceAcceleratorInfo") or {}).get("Accelerators"):
            what = "AWS Inferentia accelerators"
        else:
            what = "no GPUs"
        raise UnknownInstanceError(
            f"--instance {name}: EC2 reports {what}; vllm-eks sizes NVIDIA GPUs only (CUDA memory, NCCL): "
            "pick an NVIDIA GPU type (g5, g6, g6e, p4d, p5, p6 families; `vllm-eks catalog instances`)")
    makers = {str(g.get("Manufacturer", "")) for g in gpus}
    if makers != {"NVIDIA"}:
        raise UnknownInstanceError(
            f"--instance {name}: EC2 reports {gpus[0].get('Name', '?')} by {', '.join(sorted(makers))}, not NVIDIA; "
            "vllm-eks sizes NVIDIA GPUs only (CUDA memory, NCCL): "
            "pick an NVIDIA GPU type (`vllm-eks catalog instances`)")
    if len({g.get("Name") for g in gpus}) > 1:
        raise UnknownInstanceError(f"--instance {name}: EC2 reports GPUs of more than one model; vllm-eks sizes "
                                   "one GPU model per node")
    g = gpus[0]
    net = info.get("NetworkInfo") or {}
    cards = net.get("NetworkCards") or []
    default = int(net.get("DefaultNetworkCardIndex", 0) or 0)
    card = next((c for c in cards if int(c.get("NetworkCardIndex", -1)) == default), None)
    enis = int((card or {}).get("MaximumNetworkInterfaces") or net.get("MaximumNetworkInterfaces") or 0)
    baseline = sum(float(c.get("BaselineBandwidthInGbps") or 0) for c in cards)
    mbps = int(round(baseline * 1000)) if baseline else _rated_mbps(str(net.get("NetworkPerformance", "")))
    return Ec2Shape(
        name=name, vcpus=int((info.get("VCpuInfo") or {}).get("DefaultVCpus") or 0),
        memory_mib=int((info.get("MemoryInfo") or {}).get("SizeInMiB") or 0),
        gpu_name=str(g.get("Name", "")), gpu_count=sum(int(x.get("Count") or 0) for x in gpus),
        gpu_memory_mib=int((g.get("MemoryInfo") or {}).get("SizeInMiB") or 0),
        max_network_interfaces=enis, ipv4_per_interface=int(net.get("Ipv4AddressesPerInterface") or 0),
        efa_max=(int((net.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0)
                 if net.get("EfaSupported", True) else 0),
        network_mbps=mbps,
        local_nvme_gb=int((info.get("InstanceStorageInfo") or {}).get("TotalSizeInGB") or 0))


def _rated_mbps(performance: str) -> int:
    """"100 Gigabit", "Up to 25 Gigabit" -> Mbit/s (the rated figure; 0 when it has none)."""
    m = re.search(r"([\d.]+)\s*Gigabit", performance)
    return int(float(m.group(1)) * 1000) if m else 0


def karpenter_gpu_name(ec2_name: str) -> str:
    return ec2_name.strip().lower().replace(" ", "-")


def _catalog() -> list[hw_mod.Hardware]:
    """Catalog types whose EC2 per-GPU figure is known: what an EC2 GPU is matched against."""
    return [h for h in hw_mod.instance_catalog().values() if h.gpu_memory_mib_ec2]


def ec2_over_smi_mib() -> int:
    """The largest amount by which EC2's per-GPU MiB exceeds nvidia-smi's total among catalogued
    GPUs (T4: 16384 vs 15360): subtracted from EC2's figure of a GPU the catalog does not
    know, so the derived total errs low."""
    return max([0, *(h.gpu_memory_mib_ec2 - h.gpu_memory_mib_nvidia_smi for h in _catalog()
                     if h.gpu_memory_mib_ec2)])


def gpu_memory(gpu: str, ec2_mib: int) -> tuple[int, int, str, bool]:
    """(nvidia-smi MiB, CUDA total bytes, source, known) of a GPU EC2 names: the catalog's
    figures when a catalogued type has the same GPU and EC2 MiB, otherwise derived."""
    for h in _catalog():
        if h.gpu == gpu and h.gpu_memory_mib_ec2 == ec2_mib:
            smi = h.gpu_memory_mib_nvidia_smi
            return smi, h.gpu_memory_bytes, (f"EC2's {ec2_mib} MiB is the catalog's {gpu} ({h.name}): nvidia-smi "
                                              f"{smi} MiB; {h.gpu_memory_source}"), True
    gap = ec2_over_smi_mib()
    smi = ec2_mib - gap
    total, source = hw_mod.cuda_total_bytes(f"uncatalogued {gpu}", smi)
    return smi, total, (f"GPU {gpu} with {ec2_mib} MiB is not in data/gpus.yaml: derived, EC2's {ec2_mib} MiB less "
                        f"{gap} MiB (the largest EC2-over-nvidia-smi gap of catalogued GPUs) as nvidia-smi's total, "
                        + source), False


def _interconnect(gpu: str, count: int) -> str:
    if count == 1:
        return "single GPU"
    for h in _catalog():
        if h.gpu == gpu and h.gpus_per_node == count:
            return h.interconnect
    return "unknown (EC2 does not report it)"


def hardware_from_shape(shape: Ec2Shape, region: str, price: float | None, price_source: str,
                        max_pods: int | None = None, via: str = "", price_date: str | None = None) -> hw_mod.Hardware:
    """The Hardware of an EC2 shape: allocatable by Karpenter's formula, GPU memory from the
    catalog's facts where the GPU matches, derived otherwise."""
    gpu = karpenter_gpu_name(shape.gpu_name)
    if shape.vcpus <= 0 or shape.memory_mib <= 0 or shape.gpu_memory_mib <= 0:
        raise UnknownInstanceError(f"--instance {shape.name}: EC2's answer lacks vCPUs, memory or GPU memory "
                                   f"({shape.vcpus} vCPUs, {shape.memory_mib} MiB, "
                                   f"{shape.gpu_memory_mib} MiB per GPU); "
                                   f"{custom_flags(shape.name)}")
    if max_pods is None and (shape.max_network_interfaces <= 0 or shape.ipv4_per_interface <= 1):
        raise UnknownInstanceError(f"--instance {shape.name}: EC2's answer has no ENI figures to bound the pods by "
                                   f"({shape.max_network_interfaces} ENIs, {shape.ipv4_per_interface} IPv4 each): "
                                   "give --max-pods")
    smi, total, mem_source, known = gpu_memory(gpu, shape.gpu_memory_mib)
    alloc = node_allocatable.allocatable(shape.vcpus, shape.memory_mib, shape.max_network_interfaces,
                                         shape.ipv4_per_interface, max_pods)
    pods = (f"--max-pods {max_pods}" if max_pods is not None else
            f"{shape.max_network_interfaces} ENIs x ({shape.ipv4_per_interface} IPv4 - 1) + 2 = {alloc.max_pods}")
    shape_source = (f"EC2 DescribeInstanceTypes in {region}{f' ({via})' if via else ''}: "
                    f"{shape.vcpus} vCPUs, {shape.memory_mib} MiB, "
                    f"{shape.gpu_count} x {shape.gpu_name} {shape.gpu_memory_mib} MiB (GPU facts "
                    f"{'from the catalog' if known else 'derived: not in the catalog'}), EFA {shape.efa_max}, "
                    f"{shape.network_mbps} Mbit/s, {shape.local_nvme_gb} GB NVMe; max pods {pods}")
    speed = hw_mod._speed(gpu, smi) if known else {}
    return hw_mod.Hardware(
        name=shape.name, gpu=gpu, gpus_per_node=shape.gpu_count, gpu_memory_mib_nvidia_smi=smi,
        gpu_memory_bytes=total, gpu_memory_source=mem_source,
        interconnect=_interconnect(gpu, shape.gpu_count), vcpu=shape.vcpus, memory_mib=shape.memory_mib,
        alloc_cpu_millicores=alloc.cpu_millicores, alloc_memory_bytes=alloc.memory_mib * MIB,
        max_pods=alloc.max_pods, efa_max=shape.efa_max, network_mbps=shape.network_mbps,
        local_nvme_gb=shape.local_nvme_gb, usd_per_hour=price, in_catalog=False,
        shape_source=shape_source, price_source=price_source, gpu_memory_mib_ec2=shape.gpu_memory_mib,
        price_date=price_date, **speed)


def with_custom_shape(hw: hw_mod.Hardware, vcpus: int | None, memory_gib: float | None,
                      max_pods: int | None) -> hw_mod.Hardware:
    """Custom hardware (--gpu-memory-mib/--gpus-per-node/--hardware-name) with --vcpus and
    --memory-gib: allocatable by Karpenter's formula with kubelet's default max pods (no ENI
    figures), so the pod requests and the quota follow from the machine."""
    if vcpus is None and memory_gib is None:
        if max_pods is not None:
            raise InvalidOptionError("--max-pods needs --vcpus and --memory-gib: it only sizes the node's allocatable")
        return hw
    if vcpus is None or memory_gib is None:
        given, missing = ("--vcpus", "--memory-gib") if memory_gib is None else ("--memory-gib", "--vcpus")
        raise InvalidOptionError(f"{given} needs {missing} too: node allocatable follows from both")
    memory_mib = int(round(memory_gib * 1024))
    pods = KUBELET_DEFAULT_MAX_PODS if max_pods is None else max_pods
    alloc = node_allocatable.allocatable(vcpus, memory_mib, 0, 0, pods)
    if alloc.memory_mib <= 0:
        raise InvalidOptionError(f"--memory-gib {memory_gib:g}: leaves no allocatable memory after kube-reserved "
                                 f"and the eviction threshold ({memory_mib} MiB, {pods} pods)")
    why = "--max-pods" if max_pods is not None else f"kubelet's default maxPods {KUBELET_DEFAULT_MAX_PODS} (--max-pods)"
    source = (f"--vcpus {vcpus} and --memory-gib {memory_gib:g} ({memory_mib} MiB); max pods {pods}: {why}, "
              "custom hardware has no ENI figures")
    return replace(hw, vcpu=vcpus, memory_mib=memory_mib, alloc_cpu_millicores=alloc.cpu_millicores,
                   alloc_memory_bytes=alloc.memory_mib * MIB, max_pods=alloc.max_pods, shape_source=source)


def hardware_record(hw: hw_mod.Hardware) -> dict | None:
    """The Plan's record of a node outside the catalog whose allocatable is known (plan.json's
    `hardware`), so check-fit sizes the pool's nodes as the plan did; None otherwise."""
    if hw.in_catalog or not hw.alloc_cpu_millicores:
        return None
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(hw).items()}


def hardware_from_record(record: dict) -> hw_mod.Hardware:
    """The Hardware of a plan.json `hardware` record (unknown keys ignored)."""
    known = {f.name for f in fields(hw_mod.Hardware)}
    values = {k: v for k, v in record.items() if k in known}
    if values.get("compute_capability") is not None:
        values["compute_capability"] = tuple(values["compute_capability"])
    return hw_mod.Hardware(**values)


def price_from_products(price_list: list) -> tuple[float, str] | None:
    """(USD per hour, effective date) of the first on-demand hourly price in a GetProducts
    PriceList (each entry a JSON string, as the API returns it); None when it holds none."""
    for item in price_list:
        product = json.loads(item) if isinstance(item, str) else item
        for term in ((product.get("terms") or {}).get("OnDemand") or {}).values():
            for dim in (term.get("priceDimensions") or {}).values():
                usd = (dim.get("pricePerUnit") or {}).get("USD")
                if usd is not None and str(dim.get("unit", "Hrs")).lower().startswith("hr"):
                    value = float(usd)
                    if value > 0:
                        return value, str(term.get("effectiveDate", "")).split("T")[0] or "undated"
    return None


def pricing_filters(instance: str, location: str) -> list[dict[str, str]]:
    fields = {"instanceType": instance, "location": location, "operatingSystem": "Linux", "tenancy": "Shared",
              "preInstalledSw": "NA", "capacitystatus": "Used"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


def lookup_instance(instance: str, region: str | None, price: float | None,
                    max_pods: int | None = None) -> hw_mod.Hardware:
    """An instance type outside the catalog, read from EC2 (and its price from the Price List
    API unless --price-per-hour is given). Every failure is one UnknownInstanceError line."""
    if not re.fullmatch(EC2_INSTANCE_TYPE, instance):
        shown = instance if len(instance) <= 60 else f"{instance[:60]}..."
        raise UnknownInstanceError(
            f"--instance {shown!r} is not in the catalog (`vllm-eks catalog instances`) and is not an EC2 instance "
            "type to look up (family.size, e.g. g6e.2xlarge)")
    try:
        import boto3
        import botocore.config
        import botocore.exceptions as bx
    except ImportError:
        raise UnknownInstanceError(
            f"--instance {instance} is not in the catalog, and reading it from EC2 needs boto3 "
            f"(pip install 'vllm-eks[aws]'); or {custom_flags(instance)}") from None
    session = boto3.session.Session()
    # boto3 reads AWS_DEFAULT_REGION and the profile's region; AWS_REGION is the other SDKs' name
    region = region or session.region_name or os.environ.get("AWS_REGION") or None
    if not region:
        raise UnknownInstanceError(
            f"--instance {instance} is not in the catalog and no AWS region is set to read it from EC2: give --region "
            f"(e.g. us-east-1) or set AWS_REGION, AWS_DEFAULT_REGION or a profile region; or {custom_flags(instance)}")
    config = botocore.config.Config(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
                                    retries={"total_max_attempts": MAX_ATTEMPTS, "mode": "standard"})
    cached = _cache_read(region, instance)
    if cached is not None:
        info, read = cached
        via = f"read {read}, from the cache {_cache_file(region, instance)}"
    else:
        info = _describe(session, config, bx, instance, region)
        via = _cache_write(region, instance, info)
    shape = shape_from_ec2(info)
    date = None
    if price is not None:
        source = "--price-per-hour"
    else:
        price, source, date = _pricing(session, config, bx, instance, region)
    return hardware_from_shape(shape, region, price, source, max_pods, via, date)


def _describe(session, config, bx, instance: str, region: str) -> dict:
    """The InstanceTypeInfo of one type from EC2, or one UnknownInstanceError line."""
    where = f"EC2 DescribeInstanceTypes in {region}"
    try:
        ec2 = session.client("ec2", region_name=region, config=config)
        answer = ec2.describe_instance_types(InstanceTypes=[instance])
    except bx.NoCredentialsError:
        raise UnknownInstanceError(
            f"--instance {instance} is not in the catalog and no AWS credentials were found to read it from {where} "
            f"(set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); or {custom_flags(instance)}") from None
    except bx.ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code.startswith("InvalidInstanceType") or code == "InvalidParameterValue":
            raise UnknownInstanceError(
                f"--instance {instance}: {where} knows no such instance type ({code}): check the spelling "
                f"(e.g. g6e.2xlarge) and that {region} offers it (--region)") from None
        raise _client_failure(instance, where, code, e, "ec2:DescribeInstanceTypes") from None
    except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError) as e:
        raise _unreachable(instance, where, e) from None
    except bx.BotoCoreError as e:
        first_line = str(e).splitlines()[0] if str(e) else ''
        raise UnknownInstanceError(f"--instance {instance}: {where} failed ({type(e).__name__}: "
                                   f"{first_line}); or {custom_flags(instance)}") from None
    infos = answer.get("InstanceTypes") or []
    if not infos:
        raise UnknownInstanceError(f"--instance {instance}: {where} knows no such instance type: check the spelling "
                                   f"(e.g. g6e.2xlarge) and that {region} offers it (--region)")
    return infos[0]


def cache_dir() -> Path:
    """Where EC2's answers are kept: $VLLM_EKS_CACHE_DIR/ec2, else $XDG_CACHE_HOME/vllm-eks/ec2,
    else ~/.cache/vllm-eks/ec2 (one file per region and type; delete one to read it again)."""
    if os.environ.get("VLLM_EKS_CACHE_DIR"):
        return Path(os.environ["VLLM_EKS_CACHE_DIR"]) / "ec2"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vllm-eks" / "ec2"


def _cache_file(region: str, instance: str) -> Path:
    return cache_dir() / region / f"{instance}.json"


def _cache_read(region: str, instance: str) -> tuple[dict, str] | None:
    """A kept DescribeInstanceTypes answer younger than CACHE_MAX_AGE_DAYS, with its date."""
    try:
        kept = json.loads(_cache_file(region, instance).read_text())
        read = datetime.date.fromisoformat(kept["read"])
        info = kept["instance_type"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(info, dict) or info.get("InstanceType") != instance:
        return None
    if (datetime.date.today() - read).days > CACHE_MAX_AGE_DAYS:
        return None
    return info, read.isoformat()


def _cache_write(region: str, instance: str, info: dict) -> str:
    today = datetime.date.today().isoformat()
    path = _cache_file(region, instance)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"read": today, "region": region, "instance_type": info}, indent=1, default=str))
        tmp.replace(path)
    except OSError:
        return f"read {today}, not cached (cannot write {path})"
    return f"read {today}, kept in {path}"


def _pricing(session, config, bx, instance: str, region: str) -> tuple[float, str, str]:
    location = LOCATIONS.get(region)
    if location is None:
        raise UnknownInstanceError(
            f"--instance {instance}: vllm-eks knows no Price List location for region {region} "
            f"(known: {', '.join(sorted(LOCATIONS))}): give --price-per-hour")
    where = f"the Pricing API ({PRICING_REGION}) for {instance} in {location}"
    try:
        client = session.client("pricing", region_name=PRICING_REGION, config=config)
        answer = client.get_products(ServiceCode="AmazonEC2", Filters=pricing_filters(instance, location),
                                     FormatVersion="aws_v1", MaxResults=10)
    except bx.NoCredentialsError:
        raise UnknownInstanceError(
            f"--instance {instance}: no AWS credentials for {where}: give --price-per-hour") from None
    except bx.ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        raise _client_failure(instance, where, code, e, "pricing:GetProducts", "give --price-per-hour") from None
    except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError) as e:
        raise _unreachable(instance, where, e, "give --price-per-hour") from None
    except bx.BotoCoreError as e:
        raise UnknownInstanceError(
            f"--instance {instance}: {where} failed ({type(e).__name__}): give --price-per-hour") from None
    found = price_from_products(answer.get("PriceList") or [])
    if found is None:
        raise UnknownInstanceError(f"--instance {instance}: {where} lists no on-demand Linux shared-tenancy price: "
                                   "give --price-per-hour")
    usd, date = found
    return usd, f"Pricing API on-demand price, Linux, shared tenancy, {location}, effective {date}", date


def _client_failure(instance: str, where: str, code: str, e: Exception, action: str,
                    way_out: str | None = None) -> UnknownInstanceError:
    way_out = way_out or custom_flags(instance)
    if code in _ACCESS_DENIED:
        return UnknownInstanceError(f"--instance {instance}: {where} was refused ({code}): the credentials need "
                                    f"{action}; or {way_out}")
    if code in _BAD_CREDENTIALS:
        return UnknownInstanceError(f"--instance {instance}: {where} did not accept the credentials ({code}): check "
                                    f"AWS_PROFILE, the access key or an expired session; or {way_out}")
    if code in _THROTTLED:
        return UnknownInstanceError(f"--instance {instance}: {where} was throttled ({code}) after {MAX_ATTEMPTS} "
                                    f"attempts: retry in a minute; or {way_out}")
    message = str(getattr(e, "response", {}).get("Error", {}).get("Message", "")).splitlines()[:1]
    detail = ': ' + message[0] if message else ''
    return UnknownInstanceError(f"--instance {instance}: {where} failed ({code}{detail}); or {way_out}")


def _unreachable(instance: str, where: str, e: Exception, way_out: str | None = None) -> UnknownInstanceError:
    return UnknownInstanceError(f"--instance {instance}: could not reach {where} ({type(e).__name__}): check the "
                                f"network, proxy or AWS_ENDPOINT_URL; or {way_out or custom_flags(instance)}")

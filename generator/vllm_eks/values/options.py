"""Deployment choices that are not sizing: names, cluster, capacity. Set by `vllm-eks values`
flags; each chart's builder reads the fields it needs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.values.base import (
    ACM_CERTIFICATE_ARN,
    AVAILABILITY_ZONE,
    CAPACITY_RESERVATION_ID,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    EKS_CLUSTER_NAME,
    IAM_ROLE_ARN,
    LABEL_VALUE,
    QUANTITY_PATTERN,
    CapacityType,
    on_demand,
)
from vllm_eks.values.cidr import Cidr

ReservationId = Annotated[str, Field(pattern=CAPACITY_RESERVATION_ID, max_length=64)]
RoutingMode = Literal["service", "gateway", "alb"]


class ValuesOptions(BaseModel):
    """Choices of `vllm-eks values` that are not sizing; each field is one of its flags
    (cli/options.py makes them), the description its help."""

    model_config = ConfigDict(extra="forbid")

    release: str = Field(default="vllm", pattern=DNS1123_LABEL, max_length=53, description=(
        "Helm release name of charts/vllm-inference (DNS-1123 label, at most 53 characters)."))
    namespace: str = Field(default="llm", pattern=DNS1123_LABEL, max_length=63, description=(
        "Namespace of the model server (DNS-1123 label)."))
    # model source: the kind is the Plan's (plan.source); these are the volume flags of each kind
    hf_token_secret: str | None = Field(default="hf-token", pattern=DNS1123_SUBDOMAIN, max_length=253,
                                        description="Existing Secret with key HF_TOKEN ('' for none).")
    pvc_name: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "Existing PVC holding the weights (with --model-source-kind pvc)."))
    pvc_mount_path: str = Field(default="/models", pattern=r"^/[^:]*$", max_length=1024,
                                json_schema_extra={"flag": "--model-mount-path", "aliases": ["--pvc-mount-path"]},
                                description=(
        "Where the model's volume (--model-source-kind pvc, fsx, mountpoint-s3) is mounted; --model-source is a "
        "path under it."))
    fsx_file_system_id: str | None = Field(default=None, pattern=r"^fs-[0-9a-f]{8}([0-9a-f]{9})?$", description=(
        "With --model-source-kind fsx: the FSx for Lustre file system id (fs-...)."))
    fsx_dns_name: str | None = Field(default=None, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253,
                                     description="With --model-source-kind fsx: the file system's DNS name.")
    fsx_mount_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9]+$", max_length=64, description=(
        "With --model-source-kind fsx: the file system's Lustre mount name."))
    s3_mount_bucket: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", description=(
        "With --model-source-kind mountpoint-s3: the bucket Mountpoint mounts."))
    s3_mount_prefix: str | None = Field(default=None, pattern=r"^[^\s]*/$", max_length=1024, description=(
        "With --model-source-kind mountpoint-s3: key prefix mounted as the volume's root (ends with /)."))
    s3_mount_region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]+$", description=(
        "With --model-source-kind mountpoint-s3: the bucket's region (default: the driver's)."))
    # cache volume (charts/vllm-inference cache.*; --cache itself is a Plan flag)
    cache_pvc: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "With --cache pvc: an existing ReadWriteMany claim for the caches (default: the chart creates one)."))
    cache_size: str | None = Field(default=None, pattern=QUANTITY_PATTERN, max_length=64, description=(
        "With --cache pvc: size of the claim the chart creates (default: the Plan's cache_volume_bytes)."))
    cache_storage_class: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "With --cache pvc: StorageClass of the ReadWriteMany claim the chart creates, e.g. an EFS class "
        "(required unless --cache-pvc: EKS's default EBS class cannot provision ReadWriteMany)."))
    stage_storage_class: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "With --stage pvc: StorageClass of the ReadWriteMany claim the chart creates for the copy, e.g. an EFS "
        "class (required: EKS's default EBS class cannot provision ReadWriteMany)."))
    iam_role_arn: str | None = Field(default=None, pattern=IAM_ROLE_ARN, description=(
        "IAM role for the model server's ServiceAccount (IRSA), e.g. to read an s3:// model."))
    # cluster / capacity (charts/gpu-infra)
    cluster_name: str = Field(default="my-cluster", pattern=EKS_CLUSTER_NAME, description=(
        "EKS cluster name (Karpenter discovery tag)."))
    capacity_types: list[CapacityType] = Field(
        default_factory=on_demand, json_schema_extra={"flag": "--capacity-type"},
        description="Karpenter capacity types (repeatable; default on-demand).")
    ami_family: Literal["al2023", "bottlerocket"] = Field(default="al2023", description=(
        "EKS optimized AMI family of the GPU pools (gpu-infra amiFamily, pinned to its AMI release); with "
        "bottlerocket the chart's NVIDIA device plugin is off, the AMI runs its own."))
    zone: str | None = Field(default=None, pattern=AVAILABILITY_ZONE, max_length=64, description=(
        "Availability zone to pin the GPU pool to (EFA groups are always single-AZ)."))
    capacity_reservation_ids: list[ReservationId] = Field(
        default_factory=list, json_schema_extra={"flag": "--capacity-reservation-id"},
        description="ODCR or Capacity Block id (repeatable).")
    # EC2 placement group names: up to 255 ASCII characters (an id is pg- and 17 hex digits)
    placement_group: str | None = Field(default=None, pattern=r"^[\x21-\x7e]{1,255}$", description=(
        "EC2 placement group for EFA pools: an id when it is pg- and 17 hex digits, otherwise a name."))
    # observability
    prometheus_release_label: str = Field(default="kube-prometheus-stack", pattern=LABEL_VALUE, max_length=63,
                                          description=(
        "`release` label the Prometheus operator selects monitors and rules by."))
    prometheus_namespace: str = Field(default="monitoring", pattern=DNS1123_LABEL, max_length=63, description=(
        "Namespace of Prometheus, admitted to the metrics ports by the model server's NetworkPolicy."))
    # network policy (charts/vllm-inference networkPolicy.*)
    network_policy: bool = Field(default=True, description=(
        "Render the model server's ingress NetworkPolicy (docs/security.md)."))
    kuberay_namespace: str = Field(default="ray-system", pattern=DNS1123_LABEL, max_length=63, description=(
        "On ray-serve and disaggregated: namespace of the KubeRay operator, whose pods are the only peers the "
        "NetworkPolicy admits to the Ray dashboard (8265)."))
    vpc_cidrs: list[Cidr] = Field(default_factory=list, json_schema_extra={"flag": "--vpc-cidr"}, description=(
        "With --routing alb: CIDR the ALB connects from, e.g. the VPC's (repeatable; the NetworkPolicy admits "
        "it to port 8000)."))
    gateway_data_plane_namespaces: list[Annotated[str, Field(pattern=DNS1123_LABEL, max_length=63)]] = Field(
        default_factory=list, json_schema_extra={"flag": "--gateway-data-plane-namespace"}, description=(
            "With --routing gateway: namespace of the Gateway's data-plane proxies when it is not the Gateway's "
            "(Envoy Gateway: envoy-gateway-system; repeatable)."))
    # routing (charts/vllm-inference routing.*, apiKey)
    routing: RoutingMode = Field(default="service", description=(
        "How requests reach the servers: the chart's Service; gateway: an InferencePool with the Gateway API "
        "Inference Extension's endpoint picker behind an existing Gateway (not on Ray topologies); alb: an ALB "
        "Ingress (AWS Load Balancer Controller) with the Plan's idle timeout."))
    # set together by --gateway NAME[/NAMESPACE]
    gateway_name: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253,
                                     description="Gateway the HTTPRoute attaches to (routing gateway)")
    gateway_namespace: str | None = Field(default=None, pattern=DNS1123_LABEL, max_length=63,
                                          description="Namespace of that Gateway (default: the release namespace)")
    gateway_provider: Literal["none", "istio"] = Field(default="none", description=(
        "With --routing gateway: the Gateway's implementation. istio adds a DestinationRule so Istio speaks TLS to "
        "the endpoint picker; none adds nothing."))
    alb_certificate_arn: str | None = Field(default=None, pattern=ACM_CERTIFICATE_ARN, max_length=2048, description=(
        "With --routing alb: ACM certificate ARN of the HTTPS listener."))
    alb_scheme: Literal["internal", "internet-facing"] = Field(default="internal", description=(
        "With --routing alb: the load balancer's scheme."))
    api_key_secret: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "Existing Secret whose key api-key holds the API key vLLM requires on /v1 (VLLM_API_KEY; not on Ray "
        "topologies)."))


def efa_zone(efa_devices_per_pod: int, options: ValuesOptions) -> str:
    """The availability zone of the release: required when pods use EFA, whose traffic does not
    cross zones (one rule for the model-server pods and the GPU pool)."""
    if efa_devices_per_pod > 0 and not options.zone:
        raise InvalidOptionError(
            f"--zone is required: the plan uses EFA ({efa_devices_per_pod} interfaces per pod), and the "
            "group and its GPU pool must stay in one availability zone (EFA traffic does not cross zones)")
    return options.zone or ""


def pool_capacity_types(options: ValuesOptions) -> list[CapacityType]:
    """The GPU pool's capacity types: --capacity-type in order without repeats, plus `reserved`
    when reservation ids are given. `reserved` alone selects no capacity: Karpenter launches
    reserved nodes only into the reservations the pool names."""
    capacity_types = list(dict.fromkeys(options.capacity_types))
    if "reserved" in capacity_types and not options.capacity_reservation_ids:
        raise InvalidOptionError(
            "--capacity-type reserved needs --capacity-reservation-id (the ODCR or Capacity Block id, cr-...): "
            "Karpenter launches reserved nodes only into the reservations a pool names")
    if options.capacity_reservation_ids and "reserved" not in capacity_types:
        capacity_types.append("reserved")
    return capacity_types

"""Deployment choices that are not sizing: names, cluster, capacity. Set by `vllm-eks values`
flags; each chart's builder reads the fields it needs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.spec.request import ModelSourceKind
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

ReservationId = Annotated[str, Field(pattern=CAPACITY_RESERVATION_ID, max_length=64)]
RoutingMode = Literal["service", "gateway", "alb"]


class ValuesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    release: str = Field(default="vllm", pattern=DNS1123_LABEL, max_length=53,
                         description="Helm release name of charts/vllm-inference "
                                     "(DNS-1123 label, at most 53 characters)")
    namespace: str = Field(default="llm", pattern=DNS1123_LABEL, max_length=63,
                           description="Namespace of the model server (DNS-1123 label)")
    # model source
    model_source_kind: ModelSourceKind = "huggingface"
    hf_token_secret: str | None = Field(default="hf-token", pattern=DNS1123_SUBDOMAIN, max_length=253,
                                        description="Existing Secret holding HF_TOKEN")
    pvc_name: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253)
    pvc_mount_path: str = Field(default="/models", pattern=r"^/[^:]*$", max_length=1024,
                                description="Where the model's volume is mounted; the model source is a path under it")
    fsx_file_system_id: str | None = Field(default=None, pattern=r"^fs-[0-9a-f]{8}([0-9a-f]{9})?$",
                                           description="FSx for Lustre file system id (--model-source-kind fsx)")
    fsx_dns_name: str | None = Field(default=None, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253,
                                     description="DNS name of the FSx for Lustre file system")
    fsx_mount_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9]+$", max_length=64,
                                       description="Lustre mount name of the FSx for Lustre file system")
    s3_mount_bucket: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$",
                                        description="Bucket Mountpoint for Amazon S3 mounts "
                                                    "(--model-source-kind mountpoint-s3)")
    s3_mount_prefix: str | None = Field(default=None, pattern=r"^[^\s]*/$", max_length=1024,
                                        description="Key prefix mounted as the volume's root, ending with /")
    s3_mount_region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]+$",
                                        description="Region of the mounted bucket")
    # cache volume (charts/vllm-inference cache.*; --cache itself is a Plan flag)
    cache_pvc: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "Existing ReadWriteMany claim for the caches (--cache pvc)"))
    cache_size: str | None = Field(default=None, pattern=QUANTITY_PATTERN, max_length=64, description=(
        "Size of the cache claim the chart creates (--cache pvc; default: the Plan's cache_volume_bytes)"))
    cache_storage_class: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "StorageClass of the cache claim the chart creates (--cache pvc; default: the cluster's default)"))
    iam_role_arn: str | None = Field(default=None, pattern=IAM_ROLE_ARN, description=(
        "IAM role for the model server's ServiceAccount (IRSA annotation), e.g. to read an s3:// model"))
    # routing (charts/vllm-inference routing.*, apiKey)
    routing: RoutingMode = Field(default="service", description=(
        "How requests reach the servers: the chart's Service, a Gateway API Inference Extension InferencePool "
        "behind an existing Gateway, or an ALB Ingress"))
    gateway_name: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253,
                                     description="Gateway the HTTPRoute attaches to (routing gateway)")
    gateway_namespace: str | None = Field(default=None, pattern=DNS1123_LABEL, max_length=63,
                                          description="Namespace of that Gateway (default: the release namespace)")
    alb_certificate_arn: str | None = Field(default=None, pattern=ACM_CERTIFICATE_ARN, max_length=2048,
                                            description="ACM certificate of the ALB's HTTPS listener (routing alb)")
    alb_scheme: Literal["internal", "internet-facing"] = "internal"
    api_key_secret: str | None = Field(default=None, pattern=DNS1123_SUBDOMAIN, max_length=253, description=(
        "Existing Secret whose key api-key holds the API key vLLM checks (VLLM_API_KEY)"))
    # cluster / capacity (charts/gpu-infra)
    cluster_name: str = Field(default="my-cluster", pattern=EKS_CLUSTER_NAME)
    capacity_types: list[CapacityType] = Field(default_factory=on_demand)
    ami_family: Literal["al2023", "bottlerocket"] = "al2023"
    zone: str | None = Field(default=None, pattern=AVAILABILITY_ZONE, max_length=64)
    capacity_reservation_ids: list[ReservationId] = Field(default_factory=list)
    # EC2 placement group names: up to 255 ASCII characters (an id is pg- and 17 hex digits)
    placement_group: str | None = Field(default=None, pattern=r"^[\x21-\x7e]{1,255}$")
    # observability
    prometheus_release_label: str = Field(default="kube-prometheus-stack", pattern=LABEL_VALUE, max_length=63)


def efa_zone(efa_devices_per_pod: int, options: ValuesOptions) -> str:
    """The availability zone of the release: required when pods use EFA, whose traffic does not
    cross zones (one rule for the model-server pods and the GPU pool)."""
    if efa_devices_per_pod > 0 and not options.zone:
        raise InvalidOptionError(
            f"--zone is required: the plan uses EFA ({efa_devices_per_pod} interfaces per pod), and the "
            "group and its GPU pool must stay in one availability zone (EFA traffic does not cross zones)")
    return options.zone or ""

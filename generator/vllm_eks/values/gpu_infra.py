"""Values of charts/gpu-infra (the source of its values.schema.json) and their builder.

One GPU pool per instance type the Plan uses: a Karpenter v1 NodePool plus its EC2NodeClass,
and the node DaemonSets (NVIDIA device plugin on AL2023 only, EFA device plugin on EFA pools,
DCGM exporter). Field names and shapes were checked against the pinned Karpenter v1.14.1 CRDs
(`karpenter.sh_nodepools.yaml`, `karpenter.k8s.aws_ec2nodeclasses.yaml`, see SOURCES.tsv)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.core import contract
from vllm_eks.core.units import GIB, bytes_quantity, cpu_quantity
from vllm_eks.planning.pod_resources import DCGM_EXPORTER, EFA_DEVICE_PLUGIN, NVIDIA_DEVICE_PLUGIN, DaemonSetFootprint
from vllm_eks.spec.plan import Plan
from vllm_eks.spec.request import EC2_INSTANCE_TYPE
from vllm_eks.values.base import (
    AVAILABILITY_ZONE,
    CAPACITY_RESERVATION_ID,
    DNS1123_SUBDOMAIN,
    EKS_CLUSTER_NAME,
    IMAGE_TAG,
    CapacityType,
    ChartValues,
    ContainerImage,
    Int32,
    LabelMap,
    Quantity,
    ValuesModel,
    on_demand,
)
from vllm_eks.values.options import ValuesOptions, efa_zone, pool_capacity_types

Zone = Annotated[str, Field(pattern=AVAILABILITY_ZONE, max_length=64)]
InstanceType = Annotated[str, Field(pattern=EC2_INSTANCE_TYPE, max_length=64)]
# EC2 tag values are at most 256 characters. Keys (1-128 characters) are checked by a validator,
# not by `propertyNames` in the schema: Helm 4 reports a propertyNames error at the document root,
# without naming ec2Tags.
Ec2TagValue = Annotated[str, Field(max_length=256)]
# Keys nobody may set: AWS reserves the aws: prefix; Karpenter's EC2NodeClass refuses the tags it
# writes itself (CEL rules on spec.tags in karpenter.k8s.aws_ec2nodeclasses.yaml). The chart's
# gpu-infra.validateValues.ec2Tags helper checks the same list.
RESERVED_TAG_KEYS = ("eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                     "karpenter.k8s.aws/ec2nodeclass")


def reserved_tag_key(key: str) -> bool:
    return key.lower().startswith("aws:") or key.startswith("kubernetes.io/cluster") or key in RESERVED_TAG_KEYS

# Pinned versions. Each was the newest release found when pinned; bump them deliberately.
# AL2023 EKS AMI release v20260903 (awslabs/amazon-eks-ami releases; the AL2023 1.35.7-20260903
# release version appears in entigolabs/entigo-infralib#1488). Bottlerocket 1.65.0 is named in
# the same update. Karpenter resolves `family@version` aliases (EC2NodeClass amiSelectorTerms).
DEFAULT_AL2023_VERSION = "v20260903"
DEFAULT_BOTTLEROCKET_VERSION = "v1.65.0"
# NVIDIA/k8s-device-plugin v0.19.3 (NVIDIA/gpu-operator#2567 bumps the operator to this tag).
NVIDIA_DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin"
NVIDIA_DEVICE_PLUGIN_TAG = "v0.19.3"
# aws/eks-charts#1366 (2026-09-10) bumped the chart to image v0.5.21-eksbuild.13. The image lives
# in the EKS ECR account 602401143452 in every region; us-west-2 is the chart's default.
EFA_DEVICE_PLUGIN_IMAGE = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
EFA_DEVICE_PLUGIN_TAG = "v0.5.21-eksbuild.13"
# NVIDIA/dcgm-exporter#703 (2026-06-29): 4.5.3-4.8.2 is released as a distroless image only.
DCGM_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter"
DCGM_EXPORTER_TAG = "4.5.3-4.8.2-distroless"

# An AMI release of the alias: v20260903 (AL2023), v1.65.0 (Bottlerocket), or latest.
AMI_VERSION = r"^(latest|v[0-9]+(\.[0-9]+)*)$"
# AWS tag keys and values: letters, digits, spaces and _ . : / = + - @ (1-128 and 0-256 characters).
AWS_TAG_KEY = r"^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,128}$"
AWS_TAG_VALUE = r"^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$"

# gp3 limits: 3,000-16,000 IOPS, 125-1,000 MiB/s, throughput <= IOPS / 4 (EC2NodeClass CRD text
# quotes the IOPS range). Model weights stream from disk at load: ask for the full 1,000 MiB/s.
GP3_IOPS = 16000
GP3_THROUGHPUT_MIBPS = 1000


class Image(ContainerImage):
    """A DaemonSet's image: pinned by tag by default (each mirror of an image has a digest of its own,
    so the chart cannot default one); a digest, when set, wins over the tag."""

    tag: str = Field(pattern=IMAGE_TAG, description="Pinned image tag (never `latest`); ignored when `digest` is set")
    pull_policy: Literal["IfNotPresent", "Always"] = Field(
        default="IfNotPresent", description="Kubernetes imagePullPolicy")


class ResourceQuantities(ValuesModel):
    cpu: Quantity = Field(description="CPU quantity, e.g. 50m")
    memory: Quantity = Field(description="Memory quantity, e.g. 64Mi")


class Resources(ValuesModel):
    requests: ResourceQuantities = Field(description="Requests: what the scheduler reserves on every GPU node")
    limits: ResourceQuantities = Field(description="Limits")


class DaemonSetValues(ValuesModel):
    enabled: bool = Field(default=True, description="Render this DaemonSet")
    image: Image = Field(description="Container image")
    resources: Resources = Field(description="Container resources (requests count against every GPU node)")


class DcgmService(ValuesModel):
    port: int = Field(default=9400, ge=1, le=65535, description=(
        "Port of the ClusterIP Service (port name `metrics`) and of the container"))


class DcgmExporter(DaemonSetValues):
    service: DcgmService = Field(default_factory=DcgmService,
                                 description="ClusterIP Service in front of the exporter pods")


class Discovery(ValuesModel):
    tag_key: str = Field(default="karpenter.sh/discovery", pattern=AWS_TAG_KEY,
                         description="Tag key that marks the subnets and security groups Karpenter may use")
    tag_value: str = Field(default="", max_length=256, pattern=AWS_TAG_VALUE,
                           description="Tag value. Empty: `clusterName` (the Karpenter getting-started guide's tag)")


class MetadataOptions(ValuesModel):
    http_endpoint: Literal["enabled", "disabled"] = Field(default="enabled", description=(
        "IMDS endpoint: `enabled` (Karpenter and the kubelet need it) or `disabled`"))
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(
        default="disabled", alias="httpProtocolIPv6", description="IMDS over IPv6")
    http_put_response_hop_limit: int = Field(
        default=1, ge=1, le=64,
        description=(
            "Hops an IMDS response may travel: 1 = the node only, so pods (one hop away) cannot reach the node "
            "role's IMDS credentials"))
    http_tokens: Literal["required", "optional"] = Field(default="required", description=(
        "`required` = IMDSv2 session tokens only"))


class SecurityExceptions(ValuesModel):
    """Insecure node settings the chart refuses unless the matching key says they are meant."""
    imdsv1: bool = Field(default=False, description=(
        "Permit `metadataOptions.httpTokens: optional` (IMDSv1: credentials readable without a token)"))
    pod_imds_access: bool = Field(default=False, description=(
        "Permit `metadataOptions.httpPutResponseHopLimit` above 1 (pods reach the node role's credentials)"))
    unencrypted_volumes: bool = Field(default=False, description="Permit `rootVolume.encrypted: false` on a pool")


class RootVolume(ValuesModel):
    size_gi: int = Field(default=100, ge=1, le=16384,
                         description="gp3 volume size in GiB: OS + serving image + model cache")
    iops: int = Field(default=GP3_IOPS, ge=3000, le=16000, description="gp3 IOPS (3000-16000)")
    throughput: int = Field(default=GP3_THROUGHPUT_MIBPS, ge=125, le=1000,
                            description="gp3 throughput in MiB/s (125-1000, at most IOPS/4)")
    encrypted: bool = Field(default=True, description=(
        "Encrypt the volume (with `kmsKeyId`, a KMS key ARN, if set; else the account's default EBS key)"))
    kms_key_id: str | None = Field(default=None, description=(
        "KMS key ARN that encrypts the volume; unset = the account's default EBS key"))


class CapacityReservationTerm(ValuesModel):
    id: str | None = Field(default=None, pattern=CAPACITY_RESERVATION_ID,
                           description="ODCR or Capacity Block id (exclusive with the other fields)")
    tags: dict[str, str] | None = Field(default=None, description="Select reservations by tags")
    owner_id: str | None = Field(default=None, pattern=r"^[0-9]{12}$", description="Account that owns the reservation")
    instance_match_criteria: Literal["open", "targeted"] | None = Field(
        default=None, description="Select reservations by match criteria")


# An EC2 placement group id is `pg-` and 17 lower-case hex digits (EC2 resource ids, e.g.
# pg-0123456789abcdef0 in the EC2 API reference for DescribePlacementGroups); anything else is a name.
PLACEMENT_GROUP_ID = r"^pg-[0-9a-f]{17}$"


class PlacementGroup(ValuesModel):
    name: str | None = Field(default=None, min_length=1, description="Placement group name (exclusive with id)")
    id: str | None = Field(default=None, pattern=PLACEMENT_GROUP_ID,
                           description="Placement group id, `pg-` and 17 hex digits (exclusive with name)")


class Budget(ValuesModel):
    nodes: str = Field(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$",
                       description="Nodes (count or percent) that may be disrupted at once")
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = Field(
        default=None, description="Disruption reasons this budget applies to; unset = all")
    schedule: str | None = Field(default=None, description="Cron schedule when the budget starts (with duration)")
    duration: str | None = Field(default=None, pattern=r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$",
                                 description="How long the budget is active after each schedule hit")


class Disruption(ValuesModel):
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = Field(
        default="WhenEmpty", description=(
            "`WhenEmpty`: only nodes without serving pods are consolidated. `WhenEmptyOrUnderutilized` would evict "
            "model servers to save a fraction of a node"))
    consolidate_after: str = Field(default="10m", pattern=r"^(([0-9]+(s|m|h))+|Never)$",
                                   description=(
                                       "Keep an empty node this long before removing it, so a pod being rescheduled "
                                       "or a scale-up right after a scale-down finds a warm node instead of a cold "
                                       "boot"))
    budgets: list[Budget] = Field(default_factory=lambda: [Budget(nodes="1")], min_length=1, description=(
        "Karpenter disruption budgets (at least one). The default, one node of the pool at a time (drift to a new "
        "AMI, emptiness), replaces replicas one by one, so the PodDisruptionBudget is not the only guard"))
    expire_after: str = Field(default="720h", pattern=r"^(([0-9]+(s|m|h))+|Never)$",
                              description=(
                                  "Replace nodes after 30 days so they pick up patched AMIs. Expiry is forceful "
                                  "(budgets do not delay it) but the drain still honours PodDisruptionBudgets"))
    termination_grace_period: str | None = Field(
        default=None, pattern=r"^([0-9]+(s|m|h))+$",
        description="Force the drain after this long; unset = wait for PodDisruptionBudgets indefinitely")


class PoolDefaults(ValuesModel):
    """Settings every pool inherits unless the pool sets the key itself (maps merge key by key)."""

    capacity_types: list[CapacityType] = Field(
        default_factory=on_demand, min_length=1, description=(
            "Karpenter capacity types: `on-demand`, `spot`, `reserved` (ODCR or Capacity Blocks; needs "
            "`capacityReservations`)"))
    zones: list[Zone] = Field(default_factory=list, description=(
        "Availability zones (empty = any). EFA pools need exactly one: EFA does not cross zones"))
    efa: bool = Field(default=False, description=(
        "The pool serves pods requesting `vpc.amazonaws.com/efa`: the EFA device plugin runs there"))
    weight: int = Field(default=10, ge=1, le=100, description=(
        "NodePool weight (1-100): higher-weight pools are tried first, e.g. reserved before on-demand"))
    labels: LabelMap = Field(default_factory=dict, description=(
        "Extra node labels (the `vllm-eks.io/pool` label is always set)"))
    instance_store_policy: Literal["RAID0"] | None = Field(
        default=None, description=(
            "`RAID0` puts the kubelet and containerd storage (images, emptyDir) on the instance's NVMe disks, "
            "striped. Set it on pools whose instances have local NVMe"))
    root_volume: RootVolume = Field(default_factory=RootVolume,
                                    description=(
                                        "The volume that holds images and ephemeral storage when there is no "
                                        "instance store: the root volume on AL2023, the data volume (/dev/xvdb) on "
                                        "Bottlerocket. Sized for the OS, the serving image and the model cache; gp3 "
                                        "at full IOPS and throughput so weights load fast"))
    capacity_reservations: list[CapacityReservationTerm] = Field(
        default_factory=list, description=(
            "Capacity reservation selector terms (ODCR and Capacity Blocks), each with `id`, or with "
            "`tags`/`ownerId`/`instanceMatchCriteria`. Karpenter launches into them with capacity type `reserved`"))
    placement_group: PlacementGroup | None = Field(default=None, description=(
        "Cluster placement group, `{name: ...}` or `{id: pg-...}`, for EFA pools (low latency between the nodes of "
        "one model replica)"))
    disruption: Disruption = Field(default_factory=Disruption, description=(
        "Disruption keeps serving pods where they are. A GPU node takes minutes to boot and load a model, so "
        "Karpenter must not move pods merely to pack nodes tighter"))


class RootVolumeOverride(ValuesModel):
    size_gi: int | None = Field(default=None, ge=1, le=16384, description="gp3 volume size in GiB")
    iops: int | None = Field(default=None, ge=3000, le=16000, description="gp3 IOPS (3000-16000)")
    throughput: int | None = Field(default=None, ge=125, le=1000, description="gp3 throughput in MiB/s")
    encrypted: bool | None = Field(default=None, description="Encrypt the volume")
    kms_key_id: str | None = Field(default=None, description="KMS key ARN")


class DisruptionOverride(ValuesModel):
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] | None = Field(
        default=None, description="Karpenter consolidation policy")
    consolidate_after: str | None = Field(default=None, pattern=r"^(([0-9]+(s|m|h))+|Never)$",
                                          description="Wait this long after a node empties before removing it")
    budgets: list[Budget] | None = Field(default=None, min_length=1, description="Disruption budgets")
    expire_after: str | None = Field(default=None, pattern=r"^(([0-9]+(s|m|h))+|Never)$",
                                     description="Replace nodes this long after launch")
    termination_grace_period: str | None = Field(default=None, pattern=r"^([0-9]+(s|m|h))+$",
                                                 description="Force node drain after this long")


class Pool(ValuesModel):
    """One GPU pool. Keys left out come from poolDefaults."""

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63,
                      description=("NodePool/EC2NodeClass name and value of the vllm-eks.io/pool node label; "
                                   "cluster-scoped, so unique in the cluster: one pool per model-server release "
                                   "(`vllm-eks values` writes `<namespace>-<release>-<instance type>`)"))
    instance_types: list[InstanceType] = Field(min_length=1, description=(
        "EC2 instance types of the pool; each must be in the vllm-eks instance catalog (`vllm-eks catalog "
        "instances`, copied into files/instance-catalog.txt) unless allowUnlistedInstanceTypes"))
    allow_unlisted_instance_types: bool | None = Field(default=None, description=(
        "Accept instanceTypes the catalog does not list (a type newer than the catalog, read from EC2 or "
        "described by flags). `vllm-eks values` sets it for such a plan; by hand, check the name first: "
        "Karpenter launches nothing for a type EC2 does not have, and the pods stay Pending"))
    gpu_limit: Int32 = Field(ge=1, description="NodePool limit on nvidia.com/gpu (GPUs of all its nodes)")
    capacity_types: list[CapacityType] | None = Field(
        default=None, min_length=1, description="Karpenter capacity types")
    zones: list[Zone] | None = Field(default=None, description="Availability zones; exactly one on EFA pools")
    efa: bool | None = Field(default=None, description="Pool serves pods that request EFA interfaces")
    weight: int | None = Field(default=None, ge=1, le=100, description="NodePool weight (higher is tried first)")
    labels: LabelMap | None = Field(default=None, description="Extra node labels")
    instance_store_policy: Literal["RAID0"] | None = Field(
        default=None, description="RAID0 where the instance has local NVMe disks")
    root_volume: RootVolumeOverride | None = Field(default=None, description="Overrides of poolDefaults.rootVolume")
    capacity_reservations: list[CapacityReservationTerm] | None = Field(
        default=None, description="ODCR / Capacity Block selector terms")
    placement_group: PlacementGroup | None = Field(default=None, description="Cluster placement group")
    disruption: DisruptionOverride | None = Field(default=None, description="Overrides of poolDefaults.disruption")


class NetworkPolicyPeer(ValuesModel):
    """A NetworkPolicy peer: at least one of podSelector, namespaceSelector, ipBlock (Kubernetes objects)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})
    pod_selector: dict[str, Any] | None = Field(default=None, description="Pods (of namespaceSelector's namespaces)")
    namespace_selector: dict[str, Any] | None = Field(default=None, description="Namespaces")
    ip_block: dict[str, Any] | None = Field(default=None, description="An IP block (cidr, except)")

    @model_validator(mode="after")
    def _selects_something(self) -> NetworkPolicyPeer:
        if self.pod_selector is None and self.namespace_selector is None and self.ip_block is None:
            raise ValueError("a peer needs podSelector, namespaceSelector or ipBlock")
        return self


class NetworkPolicy(ValuesModel):
    enabled: bool = Field(default=True, description=(
        "Render a NetworkPolicy per DaemonSet: no egress, no ingress except the exporter's metrics port"))
    metrics_from: list[NetworkPolicyPeer] = Field(
        default_factory=list, description=(
            "NetworkPolicy peers allowed to scrape the DCGM exporter (empty = any source), e.g. "
            "`[{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]`"))


class GpuInfraValues(ChartValues):
    """Values of charts/gpu-infra. `vllm-eks values` writes a file of this shape from the same Plan
    as the model server, so pool labels, taints, EFA needs and GPU limits agree by construction.

    Install the chart into a namespace labelled for privileged Pod Security, because the device
    plugins and the exporter need host access (see each DaemonSet below):
      kubectl create namespace gpu-infra
      kubectl label namespace gpu-infra pod-security.kubernetes.io/enforce=privileged"""

    @classmethod
    def generated_chart_files(cls) -> dict[str, str]:
        """Chart files written by `make schemas` beside the schema: the instance types of the catalog,
        which the chart's validate helper checks pools[].instanceTypes against."""
        lines = ["# Generated by `make schemas` from the vllm-eks instance catalog", "# (generator/vllm_eks/"
                 "catalog/data/instances.csv, CUDA types only); edit that file, not this one."]
        return {"files/instance-catalog.txt": "\n".join([*lines, *sorted(instance_catalog())]) + "\n"}

    cluster_name: str = Field(min_length=1, pattern=EKS_CLUSTER_NAME, description=(
        "EKS cluster name. Unless set, the node role is `KarpenterNodeRole-<clusterName>` and subnets and security "
        "groups are found by the tag `karpenter.sh/discovery: <clusterName>` (nodeRole and discovery.tagValue "
        "default to it), as in the Karpenter getting-started guide"))
    ami_family: Literal["al2023", "bottlerocket"] = Field(default="al2023", description=(
        "EKS optimized AMI family of every pool: `al2023` or `bottlerocket`. Bottlerocket NVIDIA AMIs run the "
        "NVIDIA device plugin themselves, so `nvidiaDevicePlugin.enabled` must be false there"))
    # The EC2NodeClass alias family@version is at most 30 characters (bottlerocket@ leaves 17).
    ami_version: str = Field(pattern=AMI_VERSION, max_length=17,
                             description=(
                                 "AMI release, pinned: the alias becomes `<amiFamily>@<amiVersion>` "
                                 "(al2023@v20260903, bottlerocket@v1.65.0). A new release then arrives only when "
                                 "you change this value, as a drift that Karpenter rolls out under the pools' "
                                 "disruption budgets"))
    allow_latest_ami: bool = Field(default=False, description=(
        "Permit `amiVersion: latest`. Off by default: `latest` drifts every GPU node whenever AWS publishes an AMI, "
        "restarting every model server"))
    node_role: str = Field(default="", pattern=r"^([A-Za-z0-9+=,.@_-]{1,64})?$", description=(
        "IAM role of the nodes (EC2NodeClass `spec.role`); Karpenter creates the instance profile. Empty: "
        "`KarpenterNodeRole-<clusterName>`"))
    discovery: Discovery = Field(description="Tag that selects subnets and security groups")
    ec2_tags: dict[str, Ec2TagValue] = Field(
        default_factory=lambda: {"workload": "llm-inference"},
        description=(
            "Tags on every instance, volume and network interface Karpenter launches (cost allocation). Not the "
            "`aws:` prefix, `kubernetes.io/cluster*`, `eks:eks-cluster-name` or Karpenter's own keys "
            "(`karpenter.sh/nodepool`, `karpenter.sh/nodeclaim`, `karpenter.k8s.aws/ec2nodeclass`)"))
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions, description=(
        "IMDS of the nodes. With IMDSv2 required and a hop limit of 1, a pod (one network hop further than the "
        "node) cannot read the node role's credentials; pods get AWS access from EKS Pod Identity or IRSA instead"))
    security_exceptions: SecurityExceptions = Field(
        default_factory=SecurityExceptions, description=(
            "The chart refuses node settings that expose credentials or data unless the matching key here says the "
            "exception is meant"))
    priority_class_name: str = Field(default="system-node-critical", pattern=DNS1123_SUBDOMAIN, max_length=253,
                                     description=(
                                         "Priority class of the DaemonSets: a GPU node without its device plugin or "
                                         "exporter is useless, so they may preempt ordinary pods"))
    pool_defaults: PoolDefaults = Field(default_factory=PoolDefaults, description=(
        "Settings every pool inherits. A pool overrides a key by setting it; maps (rootVolume, disruption) merge "
        "key by key, lists replace"))
    pools: list[Pool] = Field(min_length=1, description=(
        "GPU pools: one NodePool and one EC2NodeClass each, named after the pool. Each needs `name` (also the value "
        "of the `vllm-eks.io/pool` node label the model-server pods select; cluster-scoped, so unique in the "
        "cluster: `vllm-eks values` writes `<namespace>-<release>-<instance type>`), `instanceTypes` and `gpuLimit` "
        "(NodePool `limits` on `nvidia.com/gpu`; Karpenter counts every node's GPUs, so nodes × GPUs per node; the "
        "generator adds one replica group for rolling updates); any `poolDefaults` key may be overridden"))
    nvidia_device_plugin: DaemonSetValues = Field(
        default_factory=lambda: DaemonSetValues(
            image=Image(repository=NVIDIA_DEVICE_PLUGIN_IMAGE, tag=NVIDIA_DEVICE_PLUGIN_TAG),
            resources=Resources(requests=_requests(NVIDIA_DEVICE_PLUGIN),
                                limits=ResourceQuantities(cpu="200m", memory="256Mi"))),
        description=(
            "NVIDIA device plugin: advertises `nvidia.com/gpu` on AL2023 GPU nodes. Bottlerocket NVIDIA AMIs and "
            "EKS Auto Mode run their own (two plugins would fight over the same kubelet socket), so `enabled` must "
            "be false with `amiFamily: bottlerocket`. Runs on nodes of these pools with Karpenter's "
            "`karpenter.k8s.aws/instance-gpu-count` label. Privileges: root (the kubelet's device-plugins directory "
            "is root-owned), a hostPath mount of /var/lib/kubelet/device-plugins; no capabilities, no privilege "
            "escalation. Image pinned to NVIDIA/k8s-device-plugin v0.19.3"))
    efa_device_plugin: DaemonSetValues = Field(
        default_factory=lambda: DaemonSetValues(
            enabled=False,
            image=Image(repository=EFA_DEVICE_PLUGIN_IMAGE, tag=EFA_DEVICE_PLUGIN_TAG),
            resources=Resources(requests=_requests(EFA_DEVICE_PLUGIN),
                                limits=ResourceQuantities(cpu="100m", memory="128Mi"))),
        description=(
            "EFA device plugin: advertises `vpc.amazonaws.com/efa` on the nodes of EFA pools; `enabled` is required "
            "when a pool has `efa: true`. Privileges: root, host network (it reports the node's EFA devices), "
            "hostPath mounts of the kubelet device-plugins directory and /dev/infiniband; no capabilities, no "
            "privilege escalation. The image (aws/eks-charts aws-efa-k8s-device-plugin v0.5.21-eksbuild.13) is "
            "served by the EKS account 602401143452 in every region: use your region's registry"))
    dcgm_exporter: DcgmExporter = Field(
        default_factory=lambda: DcgmExporter(
            image=Image(repository=DCGM_EXPORTER_IMAGE, tag=DCGM_EXPORTER_TAG),
            resources=Resources(requests=_requests(DCGM_EXPORTER),
                                limits=ResourceQuantities(cpu="500m", memory="1Gi"))),
        description=(
            "DCGM exporter: GPU utilisation, memory, temperature, XID errors on port 9400 (a DaemonSet and its "
            "Service). Privileges: root and CAP_SYS_ADMIN (DCGM's profiling metrics need it), a read-only hostPath "
            "mount of the kubelet pod-resources socket to map GPUs to pods. It reads all GPUs through the NVIDIA "
            "runtime (NVIDIA_VISIBLE_DEVICES=all) without requesting `nvidia.com/gpu`. Distroless is the only image "
            "published from 4.5.3-4.8.2 on"))
    network_policy: NetworkPolicy = Field(default_factory=NetworkPolicy,
                                          description="NetworkPolicies of the DaemonSets")

    @field_validator("ec2_tags")
    @classmethod
    def _tag_keys_ec2_accepts(cls, tags: dict[str, str]) -> dict[str, str]:
        badly_sized = sorted(k for k in tags if not 1 <= len(k) <= 128)
        if badly_sized:
            raise ValueError(f"ec2Tags: keys must have 1 to 128 characters, got {', '.join(map(repr, badly_sized))}")
        reserved = sorted(k for k in tags if reserved_tag_key(k))
        if reserved:
            raise ValueError(f"ec2Tags: {', '.join(map(repr, reserved))} reserved by AWS or Karpenter "
                             f"(the aws: prefix, kubernetes.io/cluster*, {', '.join(RESERVED_TAG_KEYS)})")
        return tags


def _requests(daemonset: DaemonSetFootprint) -> ResourceQuantities:
    return ResourceQuantities(cpu=cpu_quantity(daemonset.cpu_millicores), memory=bytes_quantity(daemonset.memory_bytes))


def gpu_limit(plan: Plan) -> int:
    """The Plan's pool GPU limit (see pools.py for the rule)."""
    return plan.pool.pool_gpu_limit


def _placement_group(value: str | None) -> PlacementGroup | None:
    """--placement-group: an id when it has the exact id form, else a name (`pg-llm` is a name)."""
    if not value:
        return None
    return PlacementGroup(id=value) if re.fullmatch(PLACEMENT_GROUP_ID, value) else PlacementGroup(name=value)


def build_values(plan: Plan, options: ValuesOptions) -> GpuInfraValues:
    efa = plan.pod.efa_devices_per_pod > 0
    zone = efa_zone(plan.pod.efa_devices_per_pod, options)
    capacity_types = pool_capacity_types(options)
    pool = Pool(
        name=contract.pool_name(plan.instance, options.release, options.namespace),
        instance_types=[plan.instance],
        capacity_types=capacity_types,
        zones=[zone] if zone else [],
        efa=efa,
        gpu_limit=gpu_limit(plan),
        instance_store_policy=plan.pool.instance_store_policy,
        root_volume=RootVolumeOverride(size_gi=plan.pool.root_volume_bytes // GIB, iops=plan.pool.root_volume_iops,
                                       throughput=plan.pool.root_volume_throughput_mib_s),
        capacity_reservations=[CapacityReservationTerm(id=i) for i in options.capacity_reservation_ids],
        # A plan on a type outside the catalog read it from EC2 or took it from flags: meant, so allowed.
        allow_unlisted_instance_types=True if plan.instance not in instance_catalog() else None,
        placement_group=_placement_group(options.placement_group),
    )
    values = GpuInfraValues(
        cluster_name=options.cluster_name,
        ami_family=options.ami_family,
        ami_version=DEFAULT_AL2023_VERSION if options.ami_family == "al2023" else DEFAULT_BOTTLEROCKET_VERSION,
        discovery=Discovery(),
        pools=[pool],
    )
    # Bottlerocket NVIDIA AMIs run the device plugin themselves; a second one would fight it.
    values.nvidia_device_plugin.enabled = options.ami_family == "al2023"
    values.efa_device_plugin.enabled = efa
    return values

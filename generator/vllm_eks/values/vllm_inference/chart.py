"""Values of charts/vllm-inference: the pydantic model (source of the chart's values.schema.json
and of the defaults in values.yaml) and the builder that fills it from a Plan.

Every number the chart renders (engine arguments, GPU count, /dev/shm, requests, probe budget,
drain timings, replicas) comes from the Plan through `build_values`; the chart only assembles."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from vllm_eks.core import contract
from vllm_eks.core.errors import InvalidOptionError, VllmEksError
from vllm_eks.core.topology import ON_RAY, Topology, keda_scales
from vllm_eks.core.units import bytes_quantity, cpu_quantity
from vllm_eks.spec.engine_versions import SERVER_VLLM
from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import (
    AnnotationMap,
    ChartValues,
    LabelMap,
    ResourceList,
)
from vllm_eks.values.options import ValuesOptions, efa_zone
from vllm_eks.values.vllm_inference.benchmark_job import Benchmark
from vllm_eks.values.vllm_inference.engine import Engine, engine_values
from vllm_eks.values.vllm_inference.images import (
    RAY_IMAGE_VLLM_VERSION,
    RAY_VERSION,
    VLLM_EFA_IMAGE_REPOSITORY,
    VLLM_IMAGE_TAG,
    ServerImage,
)
from vllm_eks.values.vllm_inference.model_source import Model, model_values
from vllm_eks.values.vllm_inference.multi_node import (
    Diagnostics,
    Efa,
    MultiNode,
    Nccl,
    multi_node_values,
)
from vllm_eks.values.vllm_inference.network_policy_build import check_network_policy, network_policy_values
from vllm_eks.values.vllm_inference.pod import (
    STARTUP_PERIOD_SECONDS,
    Cache,
    Drain,
    EnvVar,
    HelmTest,
    LocalObjectReference,
    NetworkPolicy,
    PodDisruptionBudget,
    Probes,
    Resources,
    Scheduling,
    SecurityContext,
    Service,
    ServiceAccount,
    Shm,
    StartupProbe,
    Strategy,
    Volume,
    VolumeMount,
    cache_values,
)
from vllm_eks.values.vllm_inference.ray import (
    Disaggregated,
    Ray,
    RayServe,
    disaggregated_values,
    ray_serve_values,
)
from vllm_eks.values.vllm_inference.routing_build import api_key_values, check_routing, routing_values
from vllm_eks.values.vllm_inference.routing_model import ApiKey, Routing
from vllm_eks.values.vllm_inference.staging_job import Staging, staging_values


class VllmInferenceValues(ChartValues):
    """Values of charts/vllm-inference. `vllm-eks values` writes a values file sized for one model
    on one instance type (see values/<scenario>/vllm-inference.yaml); pass it with -f. The defaults
    serve a small public model on one GPU."""

    global_: dict[str, Any] = Field(default_factory=dict, alias="global",
                                    description="Global values of a parent chart (unused here)")
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
        engine=engine_values(plan),
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
        cache=cache_values(plan, options),
        staging=staging_values(plan, options),
    )
    if plan.pod.efa_devices_per_pod > 0 and plan.topology in ("single-node", "multi-node"):
        # NCCL reaches EFA only through aws-ofi-nccl, which the upstream image lacks.
        values.image = ServerImage(repository=VLLM_EFA_IMAGE_REPOSITORY, tag=VLLM_IMAGE_TAG, provides=["efa"])
    # the release the Plan was sized for, declared on the image that runs it
    release = plan.engine.vllm_version
    if plan.topology in ON_RAY:
        if release != RAY_IMAGE_VLLM_VERSION:
            raise InvalidOptionError(
                f"--vllm-version {release}: the Ray images the chart pins (Ray {RAY_VERSION}) carry vLLM "
                f"{RAY_IMAGE_VLLM_VERSION}, and `values` writes only those; use `plan` for an image of your own "
                f"and set ray.image.repository, ray.image.tag and ray.image.vllmVersion {release} yourself")
        values.ray.image.vllm_version = release
    else:
        values.image.vllm_version = release
        if release != SERVER_VLLM:
            # vllm/vllm-openai publishes every release as vX.Y.Z (the EFA build takes the same tag)
            values.image.tag = f"v{release}"
    _add_topology_values(values, plan)
    _add_routing_values(values, plan, options)
    return values


def _add_routing_values(values: VllmInferenceValues, plan: Plan, options: ValuesOptions) -> None:
    """routing, apiKey and the Ray Serve router from the Plan's routing section and the options."""
    check_routing(plan, options)
    check_network_policy(plan, options)
    values.network_policy = network_policy_values(plan, options)
    routed = routing_values(plan, options)
    values.routing = Routing.model_validate(routed["routing"])
    if "rayServe" in routed:
        values.ray_serve.request_router = routed["rayServe"]["requestRouter"]
        values.ray_serve.request_timeout_seconds = routed["rayServe"]["requestTimeoutSeconds"]
    values.api_key = ApiKey.model_validate(api_key_values(options)["apiKey"])


def _add_topology_values(values: VllmInferenceValues, plan: Plan) -> None:
    """The sections only one topology uses: the LeaderWorkerSet group, Ray Serve, the phases;
    on Ray the engine settings go to Serve's engine kwargs, not to engine.args."""
    if plan.topology == "multi-node":
        values.multi_node, values.diagnostics = multi_node_values(plan)
    elif plan.topology == "ray-serve":
        values.engine.args = []
        values.ray_serve = ray_serve_values(plan)
    elif plan.topology == "disaggregated":
        values.engine.args = []
        values.disaggregated, values.ray = disaggregated_values(plan)

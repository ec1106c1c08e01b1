"""The Ray topologies of charts/vllm-inference: the RayService's Ray image and head, Ray Serve
(autoscaling, workers, router, engine kwargs) and the prefill/decode pools; and the builders of
those sections from a ray-serve or disaggregated Plan."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from vllm_eks.core.errors import VllmEksError
from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import (
    OPTIONAL_DNS1123_SUBDOMAIN,
    Int32,
    LabelMap,
    ResourceList,
    ValuesModel,
)
from vllm_eks.values.vllm_inference.engine import untyped_settings
from vllm_eks.values.vllm_inference.images import RAY_DLC_IMAGE_REPOSITORY, RAY_DLC_IMAGE_TAG, RAY_VERSION, RayImage
from vllm_eks.values.vllm_inference.pod import Resources
from vllm_eks.values.vllm_inference.routing_model import RayRequestRouter


class RayHead(ValuesModel):
    resources: Resources = Field(
        default_factory=lambda: Resources(
            requests=ResourceList(cpu="2", memory="8Gi", ephemeral_storage="20Gi"),
            limits=ResourceList(memory="8Gi")),
        description="Resources of the head pod (no GPU: it runs the Serve controller and proxy, never a model)")
    node_selector: LabelMap = Field(default_factory=dict, description=(
        "nodeSelector of the head pod. It requests no GPU and stays off the GPU pool, so it lands "
        "on the cluster's general-purpose nodes"))


class RayAuth(ValuesModel):
    mode: Literal["token", "disabled"] = Field("token", description=(
        "rayClusterConfig.authOptions.mode. token: Ray's token authentication (Ray 2.52 or later, KubeRay 1.5.1 "
        "or later): the dashboard, the Jobs API and the GCS refuse callers without the cluster's token "
        "(401 without one, 403 with a wrong one); health endpoints stay open for the probes. KubeRay creates "
        "the token Secret, gives it to the Ray containers and uses it itself. disabled: no authentication "
        "(docs/security.md)"))
    secret_name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "authOptions.secretName: an existing Secret whose `auth_token` key holds the token; empty: KubeRay "
        "creates one per RayCluster, named after it"))


class Ray(ValuesModel):
    version: str = Field(RAY_VERSION, pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$",
                         description="rayClusterConfig.rayVersion; must match the image")
    auth: RayAuth = Field(default_factory=RayAuth, description=(
        "Authentication of the Ray cluster's dashboard, Jobs API and GCS"))
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


def ray_serve_values(plan: Plan) -> RayServe:
    """rayServe.* of a ray-serve Plan: its engine settings as engine kwargs, Serve's autoscaling
    bounds and the worker group they need."""
    if plan.serve_autoscaling is None:
        raise VllmEksError("plan.serve_autoscaling: a ray-serve plan needs Serve autoscaling bounds")
    auto = plan.serve_autoscaling
    return RayServe(
        engine_kwargs=untyped_settings(plan.engine.settings),
        autoscaling=ServeAutoscaling(min_replicas=auto.min_replicas, max_replicas=auto.max_replicas,
                                     target_ongoing_requests=auto.target_ongoing_requests),
        workers=RayWorkers(replicas=auto.min_worker_pods, min_replicas=auto.min_worker_pods,
                           max_replicas=auto.max_worker_pods))


def disaggregated_values(plan: Plan) -> tuple[Disaggregated, Ray]:
    """disaggregated.* (the prefill and decode pools) and ray.* (the image NIXL needs) of a
    disaggregated Plan."""
    if plan.prefill is None or plan.decode is None:
        raise VllmEksError("plan.prefill / plan.decode: a disaggregated plan needs both pools")
    pools = {}
    for phase in (plan.prefill, plan.decode):
        shared = {k: phase.settings.get(k) for k in ("max_model_len", "gpu_memory_utilization")}
        if shared != {k: plan.engine.settings.get(k) for k in shared}:
            raise VllmEksError(f"plan.{phase.role}.settings: {', '.join(shared)} are the engine's "
                               "(engine.maxModelLen, engine.gpuMemoryUtilization), shared by both pools")
        pools[phase.role] = DisaggregatedPhase(replicas=phase.replicas,
                                               max_num_seqs=phase.settings["max_num_seqs"],
                                               engine_kwargs=untyped_settings(phase.settings))
    # NIXL's LIBFABRIC backend over EFA needs libfabric with the efa provider in the image:
    # the AWS Ray LLM DLC ships it, rayproject/ray-llm does not.
    return Disaggregated(**pools), Ray(image=RayImage(repository=RAY_DLC_IMAGE_REPOSITORY, tag=RAY_DLC_IMAGE_TAG,
                                                      provides=["efa", "nixl-libfabric"],
                                                      vllm_version=plan.engine.vllm_version))

"""The Plan: every number a deployment needs, each with the reason it has that value.

The Plan is composed of sections, each produced with its own derivations by the module that
computes it (node: catalog.instances; layout and engine: planning.decisions; memory:
memory.budget; pod: planning.pod_resources; pool and cost: planning.pools; slo:
planning.latency; routing: planning.routing; quota: planning.quota; staging: planning.staging),
composed by planning.planner.make_plan. `explain` (output.report) prints it, the chart-values
builders (values) read it; nothing recomputes a number elsewhere. `json_summary` is the stable
flat form users' scripts read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from vllm_eks.core.derivations import Derivation
from vllm_eks.core.topology import ON_RAY, Topology
from vllm_eks.spec.engine_settings import EngineSettings, serve_args
from vllm_eks.spec.engine_versions import SERVER_VLLM, VllmVersion
from vllm_eks.spec.model_source import PLAN_KEYS, ModelSource, ModelSourceKind


class Section(BaseModel):
    """A part of the Plan; its derivations explain its fields and are not part of its data."""

    model_config = ConfigDict(extra="forbid")

    derivations: list[Derivation] = Field(default_factory=list, exclude=True)


class NodePlan(Section):
    """The GPU machine one pod runs on."""

    gpu: str
    gpus_per_node: int
    gpu_memory_bytes: int = Field(description="Total memory of one GPU as CUDA reports it")
    gpu_interconnect: str = Field(description="Link between the GPUs of one node (NVLink/NVSwitch or PCIe)")
    nvlink: bool = Field(description="GPUs of a node are NVLink-connected: the topology diagnostic checks it")
    expected_bus_bandwidth_gbytes_per_s: float = Field(
        description="All-reduce bus bandwidth a multi-node group should reach over the network")


class LayoutPlan(Section):
    """How one model copy is split over GPUs and machines, and how many copies run."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    replicas: int

    # Derived, not chosen: one pod holds one tensor-parallel group and runs one pipeline stage on
    # its own machine. Kept in plan.json under their names for the scripts that read them.
    @computed_field  # type: ignore[prop-decorator]
    @property
    def nodes_per_replica(self) -> int:
        return self.pipeline_parallel_size

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gpus_per_pod(self) -> int:
        return self.tensor_parallel_size


class MemoryPlan(Section):
    """The per-GPU memory budget, as vLLM computes it at start-up."""

    dtype: str
    quantization: str | None
    kv_cache_dtype: str
    weights_bytes_total: int
    weights_bytes_per_gpu: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    kv_bytes_per_token_per_gpu: int
    block_size: int
    available_kv_cache_bytes_per_gpu: int
    kv_cache_blocks: int
    kv_cache_tokens: int
    max_model_len: int
    max_concurrency: float
    model_max_len: int | None = Field(None, exclude=True, description=(
        "The longest context vLLM derives from the model's config (max_position_embeddings, rope scaling "
        "applied), to say when max_model_len is below it (not in plan.json)"))


class EnginePlan(Section):
    """vLLM's engine settings: `settings` is what the engine reads, keyed by EngineArgs field
    names; the other fields are the planner's decisions behind it."""

    gpu_memory_utilization: float
    kv_cache_memory_bytes: int | None = Field(
        description="Set when the KV budget was pinned (vLLM --kv-cache-memory-bytes)")
    max_num_seqs: int
    max_num_batched_tokens: int
    enable_chunked_prefill: bool
    enable_prefix_caching: bool
    settings: EngineSettings = Field(description="vLLM EngineArgs field -> value")
    # a plan.json written before the version was recorded was sized for 0.32 whatever its topology
    vllm_version: VllmVersion = Field(SERVER_VLLM, description=(
        "vLLM release the engine settings and memory terms are for: the image's (spec/engine_versions.py)"))


class PodPlan(Section):
    """Requests, volumes and timings of one model-server pod."""

    shm_size_bytes: int
    efa_devices_per_pod: int
    cpu_request_millicores: int
    memory_request_bytes: int
    daemonset_reserve_cpu_millicores: int = Field(
        description="CPU left on every GPU node for its DaemonSets before the pods share the rest")
    daemonset_reserve_memory_bytes: int = Field(
        description="Memory left on every GPU node for its DaemonSets before the pods share the rest")
    ephemeral_storage_bytes: int
    load_bandwidth_bytes_per_s: int
    model_source_kind: ModelSourceKind = Field(
        "huggingface", description="Where the weights come from (--model-source-kind), which sets the load bandwidth")
    cache: Literal["emptydir", "pvc", "instance-store"] = Field(description=(
        "Volume of HOME, the Hugging Face cache and vLLM's compile caches (charts/vllm-inference cache.type)"))
    cache_read_bytes_per_s: int = Field(description="Read rate of the cache volume (warm start-up)")
    cache_volume_bytes: int = Field(description="What the cache volume holds at most: a claim's size")
    cold_startup_seconds: int = Field(description=(
        "Start-up with nothing cached: weights at the source's load bandwidth, engine init with compilation"))
    warm_startup_seconds: int = Field(description=(
        "Start-up on a cache a previous start filled: weights read from the cache volume (a Hugging Face "
        "source) and compiled graphs loaded, not compiled"))
    startup_probe_seconds: int = Field(description=(
        "The startup probe's budget: the cold start-up always (a first start on a new claim or node, or "
        "after an upgrade that changes the compile cache key, is cold)"))
    shutdown_timeout_seconds: int
    prestop_seconds: int
    termination_grace_period_seconds: int


class PoolPlan(Section):
    """The GPU NodePool and the autoscaling range it must admit."""

    autoscaling_min_replicas: int
    autoscaling_max_replicas: int
    pool_nodes: int = Field(description="Nodes the pool holds at the autoscaling maximum")
    pool_gpu_limit: int = Field(description="nvidia.com/gpu limit of the NodePool")
    root_volume_bytes: int
    instance_store_policy: Literal["RAID0"] | None = Field(
        description="RAID0: the node's NVMe disks hold kubelet and containerd storage "
                    "(EC2NodeClass instanceStorePolicy)")
    root_volume_iops: int = Field(description="gp3 IOPS of the root volume")
    root_volume_throughput_mib_s: int = Field(description="gp3 throughput of the root volume in MiB/s")
    queue_alert_threshold: int = Field(description="Requests waiting per engine that raise the queue alert")
    scale_up_period_seconds: int = Field(description="HPA scale-up policy period: one replica start-up")


class SloPlan(Section):
    """Default latency SLOs of the alert rules."""

    slo_ttft_p99_seconds: float
    slo_tpot_p99_seconds: float


class CostPlan(Section):
    cost_per_hour_usd: float | None = Field(description="On-demand price of one replica (all its nodes)")


class ServeAutoscaling(Section):
    """Ray Serve's own autoscaler for the ray-serve topology (it scales model replicas inside
    the RayCluster; KubeRay's autoscaler adds the worker pods they need)."""

    min_replicas: int
    max_replicas: int
    target_ongoing_requests: int
    min_worker_pods: int = Field(description="GPU worker pods of min_replicas (replicas x nodes per replica)")
    max_worker_pods: int = Field(description="GPU worker pods of max_replicas")


class PhasePlan(Section):
    """One phase (prefill or decode) of a disaggregated deployment: its pool size and engine settings."""

    role: Literal["prefill", "decode"]
    replicas: int
    max_num_seqs: int
    max_num_batched_tokens: int
    settings: EngineSettings = Field(description="vLLM EngineArgs of this phase (with its KV transfer)")
    kv_buffer_device: Literal["cuda", "cpu"] = Field(description=(
        "Where NIXL reads and writes the KV cache: GPU memory (GPUDirect RDMA) or a host-memory copy"))
    host_kv_buffer_bytes: int = Field(description="Host memory of the KV cache copy in one engine pod (0 with cuda)")
    kv_transfer_seconds: float = Field(description="One typical prompt's KV cache, prefill engine to decode engine")


class MeasuredPlan(Section):
    """The measured basis of max_num_seqs and the KEDA threshold: a `vllm bench serve` sweep read
    by `values --from-benchmark` (bench/feedback.py). Absent when they are estimates."""

    sources: list[str] = Field(description="File names of the sweep's result files")
    levels: list[int] = Field(description="Concurrency levels of the sweep")
    knee_concurrency: int = Field(description="Concurrency of the knee (whole endpoint)")
    knee_found: bool = Field(description="False when the highest level stands in for a knee the sweep did not reach")
    replicas: int = Field(description="Model copies that shared the measured concurrency")
    output_tokens_per_s: float = Field(description="Measured output tokens/s at the knee (whole endpoint)")
    requests_per_s: float = Field(description="Measured requests/s at the knee (whole endpoint)")
    ttft_p99_seconds: float = Field(description="Measured p99 TTFT at the knee")
    tokens_per_request: float = Field(description="Mean input + output tokens of a request at the knee")
    recommended_max_num_seqs: int = Field(description="max_num_seqs the sweep recommends (bench analyze)")
    kv_max_num_seqs: int = Field(description="Requests of the measured length the Plan's KV cache holds at once")
    max_num_seqs: int = Field(description="max_num_seqs written: the recommendation, clamped to the KV cache")
    clamped: bool = Field(
        description="The recommendation exceeded what the KV cache (or max_num_batched_tokens) admits")
    keda_queue_threshold: int = Field(description="KEDA target of vllm:num_requests_waiting per replica")


class RoutingPlan(Section):
    """How long one response may take (the request and idle timeouts of the routing in front of
    the servers) and the sizing of the Gateway API Inference Extension's endpoint picker."""

    decode_tokens_per_second: float = Field(
        description="Single-request decode rate: one token per memory-bound decode step")
    longest_stream_seconds: int = Field(
        description="A full-length response: the TTFT estimate plus max_model_len tokens at the decode rate")
    request_timeout_seconds: int = Field(
        description="HTTPRoute timeouts.request and Ray Serve http_options.request_timeout_s")
    alb_idle_timeout_seconds: int | None = Field(description=(
        "ALB idle_timeout.timeout_seconds, above longest_stream_seconds and at most 4000; None when a "
        "full-length response cannot fit in 4000 s (--routing alb is then refused)"))
    picker_cpu_request_millicores: int
    picker_memory_request_bytes: int
    picker_memory_limit_bytes: int
    picker_prefix_block_size: int = Field(description="prefix-cache-scorer blockSizeTokens (tokens per hashed block)")
    picker_max_prefix_blocks: int = Field(description="prefix-cache-scorer maxPrefixBlocksToMatch")
    picker_lru_capacity_per_server: int = Field(description="prefix-cache-scorer lruCapacityPerServer (blocks)")


class QuotaPlan(Section):
    """EC2 vCPU quota pre-flight (quota.py): the Service Quotas bucket the GPU pool's instances
    count against and the vCPUs of it the deployment needs. The same vCPUs count in the On-Demand
    bucket or in the Spot one, whichever capacity type the pool launches."""

    quota_instance_class: str | None = Field(description=(
        "Instance family class of the quota buckets (P, G, Inf, Trn, ...); None when unknown"))
    quota_on_demand_bucket: str | None = Field(description="Service Quotas name of the On-Demand bucket")
    quota_spot_bucket: str | None = Field(description="Service Quotas name of the Spot bucket")
    quota_vcpus_per_node: int | None = Field(description="vCPUs of one GPU node; None for hardware outside the catalog")
    quota_nodes_min: int = Field(description="GPU nodes at the deployment's minimum")
    quota_nodes_max: int = Field(description="GPU nodes at the autoscaling maximum (pool_nodes)")
    quota_nodes_upgrade_peak: int = Field(description="GPU nodes at the peak of a rolling update or RayService upgrade")
    quota_nodes_pool_limit: int = Field(description="GPU nodes the NodePool's GPU limit admits")
    quota_vcpus_min: int | None
    quota_vcpus_max: int | None
    quota_vcpus_upgrade_peak: int | None
    quota_vcpus_pool_limit: int | None
    quota_upgrade: str = Field(description="What the upgrade peak is (rolling update or RayService upgrade)")


class StagingPlan(Section):
    """The staging Job: what it copies where, how long it may take, how big a claim it needs."""

    staging_target: Literal["s3", "pvc"] = Field(description="Where the Job copies the repo")
    staging_repo: str = Field(description="Hugging Face repo id the Job copies")
    staging_revision: str = Field(description="Branch, tag or commit of that repo")
    staging_s3_uri: str | None = Field(description="s3://bucket/prefix of target s3")
    staging_claim_name: str | None = Field(description="Existing claim of target pvc; None: the chart creates one")
    staging_weights_bytes: int = Field(description="The checkpoint the Job copies (the Plan's weights)")
    staging_claim_bytes: int | None = Field(
        description="storage request of the claim the chart creates; None otherwise")
    staging_bandwidth_bytes_per_s: int = Field(description="Download rate the copy time assumes")
    staging_copy_seconds: int = Field(description="Expected copy time: weights / bandwidth")
    staging_deadline_seconds: int = Field(description="The Job's activeDeadlineSeconds")


class KvOffloadPlan(Section):
    """KV cache offload to host memory (--kv-offload-gib, vLLM --kv-offloading-size): the buffer,
    its host memory per pod and the prefix tokens it keeps (planning/kv_offload.py)."""

    kv_offload_gib: float = Field(description="vLLM --kv-offloading-size: GiB of the whole engine, summed over ranks")
    kv_offload_bytes: int = Field(description="The buffer in bytes (vLLM cpu_bytes_to_use)")
    kv_offload_bytes_per_rank: int = Field(description="One rank's share of the buffer")
    kv_offload_block_bytes: int = Field(description="One offloaded block: every rank's GPU block, page-aligned")
    kv_offload_blocks: int = Field(description="Blocks the buffer holds (vLLM's num_chunks)")
    kv_offload_tokens: int = Field(description="Prefix tokens the buffer keeps beyond the GPU KV cache")
    kv_offload_host_bytes_per_pod: int = Field(description=(
        "Host memory one pod holds for it: the whole buffer, in /dev/shm (added to the shm size)"))


# Sections whose fields print flat at the top of `plan --json`, in this order. `routing` and
# `quota` may be missing from a plan.json written before they were planned: they are then None.
FLAT_SECTIONS = ("node", "layout", "memory", "engine", "pod", "pool", "slo", "cost", "routing", "quota")
_OPTIONAL_SECTIONS = {"routing": RoutingPlan, "quota": QuotaPlan}


def section_type(name: str) -> type[Section]:
    """The Section class of one of FLAT_SECTIONS (the Plan's `routing` and `quota` are optional)."""
    return _OPTIONAL_SECTIONS.get(name) or Plan.model_fields[name].annotation  # type: ignore[return-value]


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="Catalog id, Hugging Face repo id, or the path of the config.json used")
    model_source: str = Field(description="What vLLM loads: Hugging Face repo id or local path")
    model_revision: str | None = Field(None, description=(
        "Commit sha of the Hugging Face repo that was sized (a repo read from the Hub); the servers load "
        "that revision. None for catalog models and local config files"))
    served_model_name: str
    instance: str
    topology: Topology

    node: NodePlan
    layout: LayoutPlan
    memory: MemoryPlan
    engine: EnginePlan
    pod: PodPlan
    pool: PoolPlan
    slo: SloPlan
    cost: CostPlan
    routing: RoutingPlan | None = Field(
        None, description="None only for a plan.json written before routing was planned")
    quota: QuotaPlan | None = Field(None, description="None only for a plan.json written before quotas were planned")
    serve_autoscaling: ServeAutoscaling | None = None
    prefill: PhasePlan | None = None
    decode: PhasePlan | None = None
    measured: MeasuredPlan | None = Field(None, description="The benchmark sweep behind max_num_seqs and the KEDA "
                                                            "threshold; None when they are estimates")
    staging: StagingPlan | None = Field(None, description="The staging Job of --stage; None without it")
    kv_offload: KvOffloadPlan | None = Field(None, description="KV offload to host memory of --kv-offload-gib; "
                                                               "None without it")
    hardware: dict[str, Any] | None = Field(None, description=(
        "The node's figures when it is outside the catalog and its shape is known (read from EC2, or custom with "
        "--vcpus/--memory-gib): what check-fit sizes the pool's nodes by; None for catalog instances"))

    @property
    def source(self) -> ModelSource:
        """The source the Plan resolved; a read-back Plan whose kind and URI disagree is refused
        naming its keys."""
        return ModelSource.resolve(self.pod.model_source_kind, self.model_source, PLAN_KEYS)

    @property
    def kv_transfer_config(self) -> dict | None:
        """vLLM --kv-transfer-config of both phases (NIXL), from the decode phase's settings."""
        return self.decode.settings.get("kv_transfer_config") if self.decode else None  # type: ignore[return-value]

    @property
    def derivations(self) -> list[Derivation]:
        extra = [s for s in (self.serve_autoscaling, self.prefill, self.measured, self.staging, self.kv_offload)
                 if s is not None]
        sections = [getattr(self, n) for n in FLAT_SECTIONS]
        return [d for s in (*sections, *extra) if s is not None for d in s.derivations]

    def serve_args(self, settings: EngineSettings | None = None) -> list[str]:
        """Arguments after `vllm serve MODEL` for these engine settings (default: the Plan's)."""
        return serve_args(
            served_model_name=self.served_model_name, tensor_parallel_size=self.layout.tensor_parallel_size,
            pipeline_parallel_size=self.layout.pipeline_parallel_size,
            settings=self.engine.settings if settings is None else settings,
            # vllm serve streams an s3:// source; on Ray, Ray Serve LLM downloads it (model_source.py)
            load_format="runai_streamer" if self.model_source.startswith("s3://") and self.topology not in ON_RAY
            else None,
            shutdown_timeout_seconds=self.pod.shutdown_timeout_seconds)

    @property
    def engine_args(self) -> list[str]:
        return self.serve_args()

    @classmethod
    def from_summary(cls, summary: dict[str, Any]) -> Plan:
        """The Plan of a `plan --json` object (a scenario's plan.json). Derivations are prose for
        people and are not read back."""
        top: dict[str, Any] = {k: summary[k] for k in
                               ("model", "model_source", "served_model_name", "instance", "topology")}
        if summary.get("model_revision"):
            top["model_revision"] = summary["model_revision"]
        for name in FLAT_SECTIONS:
            section = section_type(name)
            fields = {k: summary[k] for k in section.model_fields if k in summary}
            if name in _OPTIONAL_SECTIONS and fields.keys() <= {"derivations"}:
                continue
            if name == "engine":
                fields["settings"] = summary["engine_settings"]
            top[name] = section(**fields)
            for key in section.model_computed_fields:
                if key in summary and summary[key] != getattr(top[name], key):
                    raise ValueError(f"{key} is {summary[key]!r}, but the plan's other fields give "
                                     f"{getattr(top[name], key)!r}: it is derived, not set")
        if summary.get("serve_autoscaling"):
            top["serve_autoscaling"] = ServeAutoscaling(**summary["serve_autoscaling"])
        if summary.get("measured"):
            top["measured"] = MeasuredPlan(**summary["measured"])
        if summary.get("staging"):
            top["staging"] = StagingPlan(**summary["staging"])
        if summary.get("kv_offload"):
            top["kv_offload"] = KvOffloadPlan(**summary["kv_offload"])
        if summary.get("hardware"):
            top["hardware"] = summary["hardware"]
        for phase in ("prefill", "decode"):
            if summary.get(phase):
                p = summary[phase]
                top[phase] = PhasePlan(settings=p["engine_settings"],
                                       **{k: p[k] for k in PhasePlan.model_fields if k in p and k != "settings"})
        return cls(**top)

    def json_summary(self) -> dict[str, Any]:
        """The stable machine-readable form printed by `plan --json` and written to plan.json:
        every section's fields flat at the top level, then the topology-specific sections, and
        `measured` when a benchmark sweep set max_num_seqs and the KEDA threshold."""
        out: dict[str, Any] = {k: getattr(self, k) for k in
                               ("model", "model_source", "served_model_name", "instance", "topology")}
        # only for a repo read from the Hub: plans of catalog models keep their earlier form
        if self.model_revision is not None:
            out["model_revision"] = self.model_revision
        for name in FLAT_SECTIONS:
            section = getattr(self, name)
            if section is not None:
                out.update(section.model_dump(mode="json", exclude={"settings"}))
        out["engine_args"] = self.engine_args
        out["engine_settings"] = self.engine.settings
        out["serve_autoscaling"] = self.serve_autoscaling.model_dump(mode="json") if self.serve_autoscaling else None
        for phase in ("prefill", "decode"):
            p: PhasePlan | None = getattr(self, phase)
            out[phase] = None if p is None else {
                **p.model_dump(mode="json", exclude={"settings"}), "engine_args": self.serve_args(p.settings),
                "engine_settings": p.settings}
        out["kv_transfer_config"] = self.kv_transfer_config
        # only with --from-benchmark: plans of estimates keep their earlier form
        if self.measured is not None:
            out["measured"] = self.measured.model_dump(mode="json")
        # only with --stage: plans without it keep their earlier form
        if self.staging is not None:
            out["staging"] = self.staging.model_dump(mode="json")
        # only with --kv-offload-gib: plans without it keep their earlier form
        if self.kv_offload is not None:
            out["kv_offload"] = self.kv_offload.model_dump(mode="json")
        # only outside the catalog: plans of catalog instances keep their earlier form
        if self.hardware is not None:
            out["hardware"] = self.hardware
        out["derivations"] = [d.model_dump(mode="json") for d in self.derivations]
        return out

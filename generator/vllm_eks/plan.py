"""The Plan: every number a deployment needs, each with the reason it has that value.

The planner builds it, `explain` prints it, the emitters read it; nothing recomputes a number
elsewhere."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .topology import Topology



class Derivation(BaseModel):
    """One derived number, written so a person can check it by hand."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(description="Plan key this line explains")
    value: str = Field(description="The value, formatted with its unit")
    formula: str = Field(description="How it was computed, with the inputs substituted")
    source: str = Field(default="", description="Why this rule: vLLM behaviour, AWS fact or user pin")


class ServeAutoscaling(BaseModel):
    """Ray Serve's own autoscaler for the ray-serve topology (it scales model replicas inside
    the RayCluster; KubeRay's autoscaler adds the worker pods they need)."""

    model_config = ConfigDict(extra="forbid")

    min_replicas: int
    max_replicas: int
    target_ongoing_requests: int
    min_worker_pods: int = Field(description="GPU worker pods of min_replicas (replicas x nodes per replica)")
    max_worker_pods: int = Field(description="GPU worker pods of max_replicas")


class PoolPlan(BaseModel):
    """One pool of a prefill/decode disaggregated deployment."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["prefill", "decode"]
    replicas: int
    max_num_seqs: int
    max_num_batched_tokens: int
    engine_args: list[str]


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # what and where
    model: str = Field(description="Catalog id, or the path of the config.json used")
    model_source: str = Field(description="What vLLM loads: Hugging Face repo id or local path")
    served_model_name: str
    instance: str
    gpu: str
    gpus_per_node: int
    gpu_memory_bytes: int = Field(description="Total memory of one GPU as CUDA reports it")
    gpu_interconnect: str = Field(description="Link between the GPUs of one node (NVLink/NVSwitch or PCIe)")
    nvlink: bool = Field(description="GPUs of a node are NVLink-connected: the topology diagnostic checks it")
    expected_bus_bandwidth_gbytes_per_s: float = Field(
        description="All-reduce bus bandwidth a multi-node group should reach over the network")
    topology: Topology

    # parallelism
    tensor_parallel_size: int
    pipeline_parallel_size: int
    nodes_per_replica: int
    gpus_per_pod: int
    replicas: int

    # precision
    dtype: str
    quantization: str | None
    kv_cache_dtype: str

    # memory budget, per GPU unless named total
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

    # engine settings
    gpu_memory_utilization: float
    kv_cache_memory_bytes: int | None = Field(
        description="Set when the KV budget was pinned (vLLM --kv-cache-memory-bytes)")
    max_num_seqs: int
    max_num_batched_tokens: int
    enable_chunked_prefill: bool
    enable_prefix_caching: bool

    # pod sizing
    shm_size_bytes: int
    efa_devices_per_pod: int
    cpu_request_millicores: int
    memory_request_bytes: int
    ephemeral_storage_bytes: int
    load_bandwidth_bytes_per_s: int
    startup_probe_seconds: int
    shutdown_timeout_seconds: int
    prestop_seconds: int
    termination_grace_period_seconds: int

    # pool and autoscaling
    autoscaling_min_replicas: int
    autoscaling_max_replicas: int
    pool_nodes: int = Field(description="Nodes the pool holds at the autoscaling maximum")
    pool_gpu_limit: int = Field(description="nvidia.com/gpu limit of the NodePool")
    root_volume_bytes: int
    queue_alert_threshold: int = Field(description="Requests waiting per engine that raise the queue alert")
    scale_up_period_seconds: int = Field(description="HPA scale-up policy period: one replica start-up")

    # latency SLO defaults of the alert rules
    slo_ttft_p99_seconds: float
    slo_tpot_p99_seconds: float

    # money
    cost_per_hour_usd: float | None = Field(description="On-demand price of one replica (all its nodes)")

    engine_args: list[str] = Field(description="Arguments after `vllm serve`")
    serve_autoscaling: ServeAutoscaling | None = None
    prefill: PoolPlan | None = None
    decode: PoolPlan | None = None
    kv_transfer_config: dict | None = Field(
        default=None, description="vLLM --kv-transfer-config of both pools (NIXL over EFA via libfabric)")
    derivations: list[Derivation] = Field(default_factory=list)

    def json_summary(self) -> dict:
        """The stable machine-readable form printed by `plan --json` and written to plan.json."""
        return self.model_dump(mode="json")

"""What the user asks for: the inputs of the planner, one field per CLI flag."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# An EC2 instance type as the API and Karpenter's node.kubernetes.io/instance-type label spell it:
# family (letters, digits, an optional "-suffix" such as p6-b200) "." size.
EC2_INSTANCE_TYPE = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z0-9]+$"
# Longest accepted --model: a path (Linux PATH_MAX) or a Hugging Face repo id (96 characters).
MAX_MODEL_ARG = 4096
MAX_RATE_MIB_S = 1024 * 1024


class PlanRequest(BaseModel):
    # NaN and infinity are not sizes, prices or rates: refused at the door, so no arithmetic
    # downstream can turn them into a NaN in a plan or a traceback.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str = Field(max_length=MAX_MODEL_ARG,
                       description="Catalog id, Hugging Face repo id (org/name[@revision], read from the Hub when "
                                   "the catalog lacks it), or path to config.json")
    hf_token_file: str | None = Field(default=None, max_length=4096, description=(
        "File holding a Hugging Face token for a gated --model repo (default: HF_TOKEN)"))
    instance: str | None = Field(default=None, max_length=64, description="EC2 instance type from the catalog")
    # hardware outside the catalog
    gpu_memory_mib: int | None = None
    gpus_per_node: int | None = None
    hardware_name: str | None = Field(default=None, max_length=64, pattern=EC2_INSTANCE_TYPE, description=(
        "EC2 instance type of hardware outside the catalog (the GPU pool's instance type), e.g. p6-b200.48xlarge"))
    price_per_hour: float | None = Field(default=None, description="Override of the on-demand price")
    # outside the catalog: EC2's region, and the shape of custom hardware (catalog/ec2.py)
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$", description=(
        "AWS region an --instance outside the catalog is read from (EC2 and its Pricing location)"))
    vcpus: int | None = Field(default=None, gt=0, le=4096, description="vCPUs of custom hardware")
    memory_gib: float | None = Field(default=None, gt=0, le=64 * 1024, description="Memory of custom hardware, GiB")
    max_pods: int | None = Field(default=None, ge=1, le=1024, description=(
        "kubelet maxPods of hardware outside the catalog (default: ENI limit from EC2, else 110)"))

    # precision
    dtype: Literal["auto", "bfloat16", "float16"] = "auto"
    quantization: Literal["fp8", "awq", "gptq"] | None = None
    kv_cache_dtype: Literal["auto", "fp8"] = "auto"

    topology: Literal["auto", "ray-serve", "disaggregated"] = Field(
        default="auto", description="auto: single-node or multi-node as the model needs")
    prefill_replicas: int | None = None
    decode_replicas: int | None = None

    # pins of planner decisions
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    replicas: int | None = None
    target_concurrency: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    kv_cache_memory_gib: float | None = None
    async_scheduling: bool = Field(
        default=True, description="vLLM's async scheduling (its default on GPUs; its CPU platform turns it off)")

    # pod sizing inputs
    # Upper bounds: 1 TiB/s is far above any volume or network a node has (and 100 PiB of FSx
    # storage above any file system); past them the start-up arithmetic would leave float range.
    load_bandwidth_mib_s: float | None = Field(default=None, gt=0, le=MAX_RATE_MIB_S, description=(
        "Weight load rate for the start-up budgets (default: per source, model_source.py)"))
    model_source_kind: Literal["huggingface", "s3", "pvc", "fsx", "mountpoint-s3"] | None = Field(
        default=None, description="Where the weights come from (default: from the form of model_source)")
    fsx_throughput_per_tib: Literal[50, 100, 125, 200, 250, 500, 1000] | None = Field(default=None, description=(
        "FSx for Lustre throughput tier in MB/s per TiB of storage (--model-source-kind fsx)"))
    fsx_storage_tib: float | None = Field(default=None, le=10**5, description=(
        "FSx for Lustre storage capacity in TiB (--model-source-kind fsx)"))
    cache: Literal["emptydir", "pvc", "instance-store"] = Field(default="emptydir", description=(
        "Volume of the Hugging Face and vLLM compile caches: emptydir (lost with the pod), pvc (kept "
        "across pod restarts), instance-store (the pool's NVMe RAID0, kept across container restarts)"))
    cache_read_mib_s: float | None = Field(default=None, gt=0, le=MAX_RATE_MIB_S, description=(
        "Read rate of the cache volume for the warm start-up budget (default: planning/pod_resources.py per --cache)"))
    daemonset_reserve_cpu: str | None = Field(
        default=None, description="CPU quantity kept on every GPU node for DaemonSets (default: planning/pod_resources.py)")
    daemonset_reserve_memory: str | None = Field(
        default=None, description="Memory quantity kept on every GPU node for DaemonSets (default: planning/pod_resources.py)")
    max_nodes_per_replica: int | None = Field(default=None, description=(
        "Most machines one model copy may span (pipeline stages); 1 forbids multi-node"))
    stage: str | None = Field(default=None, max_length=1024, description=(
        "Staging Job target: s3://BUCKET/PREFIX, pvc (a claim the chart creates) or pvc:CLAIM (staging.py)"))
    stage_revision: str | None = Field(default=None, min_length=1, max_length=256, pattern=r"^[^\s]+$",
                                description="Branch, tag or commit of the repo the staging Job copies (default main)")
    stage_bandwidth_mib_s: float | None = Field(default=None, gt=0, le=MAX_RATE_MIB_S, description=(
        "Download rate of the staging Job for its deadline (default: staging.py)"))
    served_model_name: str | None = Field(default=None, max_length=256)
    model_source: str | None = Field(default=None, max_length=MAX_MODEL_ARG,
                                     description="Override of what vLLM loads (s3://..., /models/...)")


ModelSourceKind = Literal["huggingface", "s3", "pvc", "fsx", "mountpoint-s3"]


def model_source_kind(model_source: str | None) -> ModelSourceKind:
    """Where the weights come from, by the form of --model-source: an s3:// URI is streamed
    from S3, an absolute path is a mounted volume, anything else is a Hugging Face repo id
    downloaded into the pod."""
    source = model_source or ""
    if source.startswith("s3://"):
        return "s3"
    return "pvc" if source.startswith("/") else "huggingface"

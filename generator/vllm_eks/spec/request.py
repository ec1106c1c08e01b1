"""What the user asks for: the inputs of the planner, one field per CLI flag (the flags are made
from the fields)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.json_schema import JsonDict

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.spec.model_source import ModelSource, ModelSourceKind

# An EC2 instance type as the API and Karpenter's node.kubernetes.io/instance-type label spell it:
# family (letters, digits, an optional "-suffix" such as p6-b200) "." size.
EC2_INSTANCE_TYPE = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z0-9]+$"
# Longest accepted --model: a path (Linux PATH_MAX) or a Hugging Face repo id (96 characters).
MAX_MODEL_ARG = 4096
MAX_RATE_MIB_S = 1024 * 1024


# vLLM's `vllm serve` default on GPUs; a --max-num-batched-tokens is checked against it when
# --max-num-seqs is not given (the planner starts from it).
DEFAULT_MAX_NUM_SEQS = 256
# Smallest --kv-cache-memory taken: 1 MiB (anything smaller rounds to no cache at all).
MIN_KV_PIN_GIB = 1 / 1024


def _flag(name: str) -> dict:
    """Field metadata for a flag spelled other than the field's name with dashes."""
    return {"flag": name}


# Field metadata of an engine setting that does not change the sizing: the planner copies a given
# value into the Plan's engine settings under the field's name, which must be vLLM's EngineArgs
# field (so `vllm serve --<name>` and Ray Serve LLM's engine_kwargs both take it); unset, vLLM's
# own default applies and nothing is written.
ENGINE_SETTING: JsonDict = {"engine_setting": True}


class PlanRequest(BaseModel):
    """The planner's inputs. Each field is one `vllm-eks plan/explain/values` flag: the CLI's
    options are generated from these fields (cli/options.py), so the description is the help,
    a Literal the choices, and a bound the check."""

    # NaN and infinity are not sizes, prices or rates: refused at the door, so no arithmetic
    # downstream can turn them into a NaN in a plan or a traceback.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: str = Field(max_length=MAX_MODEL_ARG, description=(
        "Catalog id, Hugging Face repo id (ORG/NAME[@REVISION]: read from the Hub, or HF_ENDPOINT, when the "
        "catalog lacks it; cached, HF_HUB_OFFLINE=1 reads only the cache), or path to a config.json (or its "
        "folder)."))
    instance: str | None = Field(default=None, max_length=64, description=(
        "EC2 instance type: from the catalog (`vllm-eks catalog instances`), else read from EC2 and the Pricing "
        "API with your AWS credentials (needs vllm-eks[aws])."))
    # hardware outside the catalog
    gpu_memory_mib: int | None = Field(default=None, description=(
        "Hardware outside the catalog: memory of one GPU in MiB (as nvidia-smi reports)."))
    # le: the largest GPU machines have 8 (EC2 P5/P6) or 16 (DGX-2) GPUs; 64 leaves room, and a
    # bound keeps the TP x PP search from looping over a typo such as 100000
    gpus_per_node: int | None = Field(default=None, le=64, description=(
        "Hardware outside the catalog: GPUs per machine."))
    hardware_name: str | None = Field(default=None, max_length=64, pattern=EC2_INSTANCE_TYPE, description=(
        "Hardware outside the catalog: its EC2 instance type (the GPU pool's instance type), e.g. "
        "p6-b200.48xlarge."))
    price_per_hour: float | None = Field(default=None, description="Override the on-demand USD price of one node.")
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$", description=(
        "AWS region to read an --instance outside the catalog from (EC2 DescribeInstanceTypes and its Pricing "
        "API location; default: AWS_REGION or the profile's region)."))
    vcpus: int | None = Field(default=None, gt=0, le=4096, description=(
        "Custom hardware: vCPUs of one machine (sizes the pod's CPU and the EC2 vCPU quota)."))
    memory_gib: float | None = Field(default=None, gt=0, le=64 * 1024, description=(
        "Custom hardware: memory of one machine in GiB (sizes the pod's memory)."))
    max_pods: int | None = Field(default=None, ge=1, le=1024, description=(
        "Hardware outside the catalog: the node's kubelet maxPods (default: the ENI limit of a type read from "
        "EC2; 110, kubelet's default, for custom hardware)."))

    # precision
    dtype: Literal["auto", "bfloat16", "float16"] = Field(default="auto", description=(
        "Weight and activation dtype (vLLM's --dtype): auto keeps the checkpoint's dtype where the GPU supports "
        "it, else (and for float32 checkpoints) the first the GPU supports; sets the weight and KV bytes sized."))
    quantization: Literal["fp8", "awq", "gptq"] | None = Field(default=None, description=(
        "Weight quantization (fp8 works on 16-bit checkpoints; awq/gptq need such a checkpoint)."))
    kv_cache_dtype: Literal["auto", "fp8"] = Field(default="auto", description=(
        "KV cache dtype (vLLM's --kv-cache-dtype): auto stores KV in the model's dtype; fp8 halves the KV bytes "
        "per token of a 16-bit model, so about twice the tokens fit."))

    topology: Literal["auto", "ray-serve", "disaggregated"] = Field(default="auto", description=(
        "auto: single-node Deployment or multi-node LeaderWorkerSet as the model needs; ray-serve: KubeRay "
        "RayService; disaggregated: prefill/decode pools joined by NIXL over EFA."))
    prefill_replicas: int | None = Field(default=None, gt=0, description="Disaggregated: pin the prefill pool size.")
    decode_replicas: int | None = Field(default=None, gt=0, description="Disaggregated: pin the decode pool size.")

    # pins of planner decisions
    tensor_parallel_size: int | None = Field(default=None, gt=0, description=(
        "Pin TP (GPUs per pod); must divide the attention heads."))
    pipeline_parallel_size: int | None = Field(default=None, gt=0, description=(
        "Pin PP (machines per model copy)."))
    max_nodes_per_replica: int | None = Field(default=None, gt=0, description=(
        "Most machines one model copy may span; 1 forbids multi-node (default: as many as it needs, up to 16)."))
    replicas: int | None = Field(default=None, gt=0, description="Pin the number of model copies.")
    target_concurrency: int | None = Field(default=None, gt=0, description=(
        "Requests to serve at once at max-model-len; sets replicas."))
    max_model_len: int | None = Field(default=None, gt=0, description="Pin the context length.")
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1, description=(
        "Fraction of each GPU vLLM may use, in (0, 1]; default 0.90."))
    max_num_seqs: int | None = Field(default=None, gt=0, description=(
        "Pin the maximum number of running sequences."))
    max_num_batched_tokens: int | None = Field(default=None, gt=0, description=(
        "Pin the tokens per scheduler step."))
    block_size: int | None = Field(default=None, gt=0, description=(
        "KV cache block size in tokens (default: the one vLLM's attention backend for the model and GPU picks: "
        "16, or 32/64 for MLA models on Blackwell / on Hopper with an FP8 KV cache; see explain)."))
    kv_cache_memory_gib: float | None = Field(default=None, json_schema_extra=_flag("--kv-cache-memory"),
                                              description=(
        "KV cache GiB per GPU, skipping the profile estimate (vLLM --kv-cache-memory-bytes)."))
    # le: 4 TiB is above the memory of any GPU instance EC2 has (p6-b300: 4 TiB)
    kv_offload_gib: float | None = Field(default=None, gt=0, le=4096, description=(
        "GiB of host memory for vLLM's KV cache offload (--kv-offloading-size, summed over the engine's ranks): "
        "prefixes evicted from the GPUs are kept there; added to the pod's /dev/shm and memory, checked against "
        "the node's allocatable memory. single-node, multi-node and ray-serve; not disaggregated."))
    async_scheduling: bool = Field(default=True, description=(
        "vLLM's async scheduling (on by default on GPUs; vLLM's CPU platform turns it off). Sliding-window KV "
        "sizing depends on it."))
    generation_config: Literal["auto", "vllm"] | None = Field(default=None, json_schema_extra=ENGINE_SETTING,
                                                              description=(
        "Sampling defaults of requests that set none (vLLM's --generation-config): auto applies the model's "
        "generation_config.json (vLLM's default), vllm ignores it and uses vLLM's own."))
    max_num_queued_reqs: int | None = Field(default=None, ge=0, json_schema_extra=ENGINE_SETTING, description=(
        "Requests one engine holds waiting or running before it answers new ones HTTP 503, so clients retry "
        "elsewhere (vLLM's --max-num-queued-reqs, from 0.32; unset: no limit). Not in vLLM 0.26, the Ray images'."))
    vllm_version: Literal["0.26.0", "0.32.0"] | None = Field(default=None, description=(
        "vLLM release of the image that runs the model, which the plan is sized for (default: the pinned "
        "image's: 0.32.0 for single-node and multi-node, 0.26.0 in Ray 2.58's images for ray-serve and "
        "disaggregated). single-node and multi-node values then use vllm/vllm-openai:v<release>; for the Ray "
        "topologies only `plan` takes another release (no pinned Ray image carries it)."))

    # pod sizing inputs
    # Upper bounds: 1 TiB/s is far above any volume or network a node has (and 100 PiB of FSx
    # storage above any file system); past them the start-up arithmetic would leave float range.
    load_bandwidth_mib_s: float | None = Field(default=None, gt=0, le=MAX_RATE_MIB_S, description=(
        "Weight download/load rate per pod for the start-up budgets (default: per --model-source-kind, see "
        "`explain` and docs/model-sources.md)."))
    model_source_kind: ModelSourceKind | None = Field(default=None, description=(
        "Where the weights come from (default: from --model-source: s3:// is s3, a path is pvc, else "
        "huggingface); fsx and mountpoint-s3 mount a path the chart's PersistentVolume provides."))
    fsx_throughput_per_tib: Literal[50, 100, 125, 200, 250, 500, 1000] | None = Field(default=None, description=(
        "With --model-source-kind fsx: the file system's throughput tier in MB/s per TiB (Persistent-1 "
        "50/100/200, Persistent-2 125/250/500/1000, Scratch-2 200; default 250)."))
    fsx_storage_tib: float | None = Field(default=None, gt=0, le=10**5, description=(
        "With --model-source-kind fsx: the file system's storage in TiB (default 1.2); with the tier it gives "
        "the load bandwidth."))
    cache: Literal["emptydir", "pvc", "instance-store"] = Field(default="emptydir", description=(
        "Volume of the Hugging Face and vLLM compile caches: emptydir (lost with the pod), pvc (a ReadWriteMany "
        "claim kept across pod restarts: warm restarts), instance-store (the pool's NVMe RAID0; kept across "
        "container restarts). Sets the warm start-up budget; see docs/caching.md."))
    cache_read_mib_s: float | None = Field(default=None, gt=0, le=MAX_RATE_MIB_S, description=(
        "Read rate of the cache volume for the warm start-up budget (default: 125 for pvc, 1000 otherwise)."))
    stage: str | None = Field(default=None, max_length=1024, description=(
        "Render the staging Job that copies the model's Hugging Face repo once: s3://BUCKET/PREFIX (equal to "
        "--model-source), pvc (a claim the chart creates, sized from the weights) or pvc:CLAIM (an existing "
        "claim); with pvc, --model-source is the path the servers load the copy from."))
    stage_revision: str | None = Field(default=None, min_length=1, max_length=256, pattern=r"^[^\s]+$",
                                       description=(
        "With --stage: branch, tag or commit to copy (default: the commit a Hub model outside the catalog was "
        "sized at, else main)."))
    stage_bandwidth_mib_s: float | None = Field(default=None, gt=0, le=MAX_RATE_MIB_S, description=(
        "With --stage: download rate the Job's deadline assumes (default 200; see explain)."))
    daemonset_reserve_cpu: str | None = Field(default=None, description=(
        "CPU kept on every GPU node for its DaemonSets (Kubernetes quantity, e.g. 2 or 1500m; default 2, see "
        "`explain`)."))
    daemonset_reserve_memory: str | None = Field(default=None, description=(
        "Memory kept on every GPU node for its DaemonSets (Kubernetes quantity, e.g. 4Gi; default 4Gi)."))
    served_model_name: str | None = Field(default=None, max_length=256, description=(
        "Name clients use (default: the Hugging Face repo id; with a local config.json, --model-source when "
        "given)."))
    model_source: str | None = Field(default=None, max_length=MAX_MODEL_ARG, description=(
        "What vLLM loads instead of the repo id: s3://bucket/prefix or a mounted path."))
    hf_token_file: str | None = Field(default=None, max_length=4096, description=(
        "File holding a Hugging Face token, to read a gated --model repo from the Hub (default: the HF_TOKEN "
        "environment variable)."))

    @field_validator("kv_cache_memory_gib")
    @classmethod
    def _kv_pin_holds_a_block(cls, v: float | None) -> float | None:
        if v is not None and v < MIN_KV_PIN_GIB:
            raise InvalidOptionError(f"--kv-cache-memory must be at least {MIN_KV_PIN_GIB:g} GiB (1 MiB), got {v:g}")
        return v

    @field_validator("load_bandwidth_mib_s", "cache_read_mib_s", "stage_bandwidth_mib_s")
    @classmethod
    def _rate_is_a_byte_per_second(cls, v: float | None) -> float | None:
        # the planner works in whole bytes per second: less than one is zero, and a budget divided by it
        if v is not None and v * 1024**2 < 1:
            raise ValueError(f"below one byte per second (valid: at least {1 / 1024**2:.3g} MiB/s, "
                             f"at most {MAX_RATE_MIB_S})")
        return v

    @field_validator("block_size")
    @classmethod
    def _block_is_a_power_of_two(cls, v: int | None) -> int | None:
        if v is not None and v & (v - 1):
            raise InvalidOptionError(f"--block-size must be a power of two (e.g. 16, 32, 128), got {v}")
        return v

    def engine_passthrough(self) -> dict[str, str | int | float | bool]:
        """The given engine settings that do not change the sizing (fields marked ENGINE_SETTING)."""
        return {name: value for name, info in type(self).model_fields.items()
                if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("engine_setting")
                and (value := getattr(self, name)) is not None}

    @property
    def source(self) -> ModelSource:
        """--model-source-kind with --model-source (the kind defaults to the source's form)."""
        return ModelSource.resolve(self.model_source_kind, self.model_source)

    @model_validator(mode="after")
    def _flags_agree(self) -> PlanRequest:
        """The rules between flags; each names both."""
        if self.replicas is not None and self.target_concurrency is not None:
            raise InvalidOptionError("--replicas conflicts with --target-concurrency: give one of them")
        if self.kv_cache_memory_gib is not None and self.gpu_memory_utilization is not None:
            raise InvalidOptionError("--kv-cache-memory conflicts with --gpu-memory-utilization: a fixed KV budget "
                                     "skips the utilization-based profile")
        if (self.pipeline_parallel_size and self.max_nodes_per_replica
                and self.pipeline_parallel_size > self.max_nodes_per_replica):
            raise InvalidOptionError(
                f"--pipeline-parallel-size {self.pipeline_parallel_size} conflicts with --max-nodes-per-replica "
                f"{self.max_nodes_per_replica}: each pipeline stage is one machine")
        batched, seqs = self.max_num_batched_tokens, self.max_num_seqs
        if batched is not None and batched < (seqs or DEFAULT_MAX_NUM_SEQS):
            given = f"--max-num-seqs ({seqs})" if seqs else f"max_num_seqs ({DEFAULT_MAX_NUM_SEQS}, the default)"
            raise InvalidOptionError(f"--max-num-batched-tokens ({batched}) must be >= {given}")
        return self

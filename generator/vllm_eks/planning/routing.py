"""The routing section of the Plan: how long one response can take, the timeouts of the routing
in front of the servers that follow from it, and the sizing of the endpoint picker (EPP) of the
Gateway API Inference Extension.

Timeouts. A full-length response is the TTFT estimate (the slo section) plus max_model_len
tokens at the single-request decode rate (latency.decode_step). The request timeout of the
HTTPRoute and of Ray Serve's proxy leaves room for a slower decode under load; the ALB idle
timeout must be above the longest silence of a connection, which for a non-streamed response
is the whole response, and the ALB caps it at 4000 s.

Endpoint picker. GIE v1.5.0's prefix-cache-scorer hands its parameters to the
approx-prefix-cache-producer plugin, which hashes the prompt in blocks of `blockSizeTokens`
tokens (times 4 characters per token: the EPP has no tokenizer), matches at most
`maxPrefixBlocksToMatch` blocks, and keeps one LRU index of `lruCapacityPerServer` block hashes
per server. With autoTune (on by default) it reads the block size and the server's block count
from vLLM's vllm:cache_config_info metric; the parameters are the fallback, so the Plan sets
them to the same figures."""

from __future__ import annotations

import math

from vllm_eks.catalog.instances import Hardware
from vllm_eks.core.derivations import Derivations
from vllm_eks.core.topology import ON_RAY, Topology
from vllm_eks.core.units import MIB, gib
from vllm_eks.model.architecture import Architecture
from vllm_eks.planning.latency import DEFAULT_TPOT_SLO, decode_step
from vllm_eks.spec.plan import MemoryPlan, PoolPlan, RoutingPlan, SloPlan

# Decode under a full batch is slower than one request alone (the TPOT alert allows 3x the
# step); the request timeout gives a full-length response twice its single-request time.
REQUEST_TIMEOUT_MARGIN = 2.0
# The ALB idle timeout only has to outlast the longest silence; a quarter more than a whole
# non-streamed response, capped at the ALB maximum.
ALB_IDLE_MARGIN = 1.25
TIMEOUT_STEP_SECONDS = 60
ALB_IDLE_TIMEOUT_MAX_SECONDS = 4000
ALB_SOURCE = ("ALB connection idle timeout: 1 to 4000 seconds, default 60 "
              "(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/edit-load-balancer-attributes.html)")
DECODE_SOURCE = "estimate: latency.py's memory-bound decode step (the one behind the TPOT SLO), one request alone"
STREAM_SOURCE = "a response as long as the context allows; the TTFT is the TTFT alert's default SLO"
TIMEOUT_SOURCE = ("HTTPRoute rules[].timeouts.request and Ray Serve http_options.request_timeout_s (default: none) "
                  "end a request that takes longer")

# GIE v1.5.0 (tag commit df9f8909): the prefix plugin's parameters and defaults.
EPP_SOURCE = ("gateway-api-inference-extension v1.5.0 pkg/epp/framework/plugins/requestcontrol/dataproducer/"
              "approximateprefix/types.go (blockSizeTokens 16, maxPrefixBlocksToMatch 256, lruCapacityPerServer "
              "31250 entries per server; `blockSize` in characters is deprecated and an error without blockSizeTokens) "
              "and hashing.go (blocks of blockSizeTokens x 4 characters); pkg/epp/config/loader/configloader.go "
              "passes prefix-cache-scorer's parameters to that plugin")
EPP_MAX_BLOCKS_SOURCE = ("gateway-api-inference-extension v1.5.0 approximateprefix/hashing.go: the prompt is cut to "
                         "maxPrefixBlocksToMatch blocks (default 256) before hashing")
EPP_LRU_SOURCE = ("gateway-api-inference-extension v1.5.0 approximateprefix/indexer.go: "
                  "one LRU of lruCapacityPerServer block hashes per server, "
                  "used when autoTune finds no num_gpu_blocks (default 31250)")
EPP_CHARS_PER_TOKEN = 4
# Bytes the EPP's prefix index holds per entry: "each entry is about 358[B]" in
# gateway-api-inference-extension v1.5.0 site-src/guides/epp-configuration/prefix-aware.md.
EPP_INDEX_ENTRY_BYTES = 358
# Go's default GOGC=100 lets the heap grow to twice the live data before a collection.
GO_HEAP_FACTOR = 2
# The picker's own needs with an empty index (its informers, gRPC server, scheduler and metrics),
# and per endpoint: it scrapes every endpoint's /metrics each 50 ms (--refresh-metrics-interval)
# and scores it for every request. A project estimate, far below the upstream chart's 4 CPU / 8Gi
# (sized there for high QPS); raise routing.gateway.picker.resources for heavy traffic.
PICKER_BASE_CPU_M = 500
PICKER_CPU_PER_ENDPOINT_M = 25
PICKER_BASE_MEMORY_BYTES = 512 * MIB
PICKER_MEMORY_STEP = 64 * MIB
PICKER_LIMIT_FACTOR = 2
PICKER_SOURCE = ("project estimate of the endpoint picker's needs; the upstream chart requests 4 CPU / 8Gi for "
                 "high QPS (gateway-api-inference-extension v1.5.0 config/charts/epplib/values.yaml)")

def _ceil_to(value: float, step: int) -> int:
    return int(math.ceil(value / step) * step)


def longest_stream_seconds(ttft_seconds: float, decode_tokens_per_second: float, max_model_len: int) -> int:
    """A full-length response, in whole seconds: TTFT plus max_model_len tokens at the decode rate."""
    return math.ceil(ttft_seconds + max_model_len / decode_tokens_per_second)


def alb_idle_timeout(longest_stream: int) -> int | None:
    """Above the longest stream and at most the ALB maximum; None when no value can be both."""
    if longest_stream >= ALB_IDLE_TIMEOUT_MAX_SECONDS:
        return None
    return min(ALB_IDLE_TIMEOUT_MAX_SECONDS, _ceil_to(longest_stream * ALB_IDLE_MARGIN, TIMEOUT_STEP_SECONDS))


def alb_max_model_len(ttft_seconds: float, decode_tokens_per_second: float) -> int:
    """The largest max_model_len whose full-length response stays below the ALB maximum (0: none)."""
    length = max(0, math.floor((ALB_IDLE_TIMEOUT_MAX_SECONDS - 1 - ttft_seconds) * decode_tokens_per_second))
    while length > 0 and alb_idle_timeout(
            longest_stream_seconds(ttft_seconds, decode_tokens_per_second, length)) is None:
        length -= 1
    return length


def plan_alb_max_model_len(routing: RoutingPlan, slo: SloPlan) -> int:
    """alb_max_model_len for a Plan's figures (the CLI names it when --routing alb is refused)."""
    return alb_max_model_len(slo.slo_ttft_p99_seconds, routing.decode_tokens_per_second)


def routing_plan(a: Architecture, hw: Hardware, tp: int, pp: int, weights_total: int, memory: MemoryPlan,
                 pool: PoolPlan, slo: SloPlan, topology: Topology) -> RoutingPlan:
    """The routing section of the Plan, with a derivation for every field."""
    d = Derivations()
    step = decode_step(a, hw, tp, pp, weights_total)
    if step is None:
        rate = round(1 / DEFAULT_TPOT_SLO, 1)
        d.add("decode_tokens_per_second", f"{rate:g} tokens/s",
              f"no datasheet memory bandwidth for {hw.gpu}: 1 / the default TPOT SLO {DEFAULT_TPOT_SLO} s",
              DECODE_SOURCE)
    else:
        rate = max(0.1, round(1 / step.seconds, 1))
        d.add("decode_tokens_per_second", f"{rate:g} tokens/s",
              f"1 / decode step: {step.formula}{step.pp_note}", DECODE_SOURCE)
    ttft, max_len = slo.slo_ttft_p99_seconds, memory.max_model_len
    longest = longest_stream_seconds(ttft, rate, max_len)
    d.add("longest_stream_seconds", f"{longest} s",
          f"ceil(TTFT {ttft:g} s (slo_ttft_p99_seconds) + max_model_len {max_len:,} tokens / {rate:g} tokens/s)",
          STREAM_SOURCE)
    request_timeout = _ceil_to(longest * REQUEST_TIMEOUT_MARGIN, TIMEOUT_STEP_SECONDS)
    d.add("request_timeout_seconds", f"{request_timeout} s",
          f"{longest} s x {REQUEST_TIMEOUT_MARGIN:g} (decode under load is slower than one request alone), "
          f"rounded up to a whole minute", TIMEOUT_SOURCE)
    idle = alb_idle_timeout(longest)
    if idle is None:
        fits = alb_max_model_len(ttft, rate)
        d.add("alb_idle_timeout_seconds", "None",
              f"a full-length response takes {longest} s, not below the ALB maximum of "
              f"{ALB_IDLE_TIMEOUT_MAX_SECONDS} s: --routing alb is refused; max_model_len {fits:,} or less fits",
              ALB_SOURCE)
    else:
        d.add("alb_idle_timeout_seconds", f"{idle} s",
              f"min({ALB_IDLE_TIMEOUT_MAX_SECONDS} s, {longest} s x {ALB_IDLE_MARGIN:g} rounded up to a whole "
              f"minute): above the longest stream, which a non-streamed response spends silent", ALB_SOURCE)

    block = memory.block_size
    d.add("picker_prefix_block_size", f"{block} tokens",
          f"vLLM's KV block size (block_size): the EPP hashes {block} x {EPP_CHARS_PER_TOKEN} = "
          f"{block * EPP_CHARS_PER_TOKEN} characters per block; with autoTune it reads the same figure from "
          "vllm:cache_config_info", EPP_SOURCE)
    max_blocks = math.ceil(max_len / block)
    d.add("picker_max_prefix_blocks", str(max_blocks),
          f"ceil(max_model_len {max_len:,} / {block}): a prompt as long as the context is matched whole",
          EPP_MAX_BLOCKS_SOURCE)
    lru = math.ceil(memory.kv_cache_tokens / block)
    d.add("picker_lru_capacity_per_server", f"{lru:,} blocks",
          f"ceil(kv_cache_tokens {memory.kv_cache_tokens:,} / {block}): the index remembers as many blocks per "
          "server as its KV cache holds (fewer: false misses; more: false hits)", EPP_LRU_SOURCE)

    endpoints = pool.autoscaling_max_replicas
    if topology == "multi-node":
        who = (f"{endpoints} LeaderWorkerSet groups at the autoscaling maximum; only leaders serve "
               "(the InferencePool selects the leader pods)")
    elif topology in ON_RAY:
        who = (f"{endpoints} model copies at the autoscaling maximum, as if each were an endpoint: unused, "
               f"--routing gateway is refused for the {topology} topology (Ray Serve's router balances there)")
    else:
        who = f"{endpoints} server pods at the autoscaling maximum"
    index_bytes = endpoints * lru * EPP_INDEX_ENTRY_BYTES
    cpu = _ceil_to(PICKER_BASE_CPU_M + PICKER_CPU_PER_ENDPOINT_M * endpoints, 100)
    d.add("picker_cpu_request_millicores", f"{cpu}m",
          f"{PICKER_BASE_CPU_M}m + {PICKER_CPU_PER_ENDPOINT_M}m x {endpoints} endpoints, rounded up to 100m; "
          f"endpoints: {who}", PICKER_SOURCE)
    memory_request = _ceil_to(PICKER_BASE_MEMORY_BYTES + GO_HEAP_FACTOR * index_bytes, PICKER_MEMORY_STEP)
    d.add("picker_memory_request_bytes", gib(memory_request),
          f"{gib(PICKER_BASE_MEMORY_BYTES)} + {GO_HEAP_FACTOR} (Go heap growth, GOGC=100) x index "
          f"{endpoints} endpoints x {lru:,} blocks x {EPP_INDEX_ENTRY_BYTES} B = {index_bytes / 1e6:.1f} MB, "
          f"rounded up to 64 MiB", PICKER_SOURCE + "; 358 B per index entry: gateway-api-inference-extension "
          "v1.5.0 site-src/guides/epp-configuration/prefix-aware.md")
    memory_limit = PICKER_LIMIT_FACTOR * memory_request
    d.add("picker_memory_limit_bytes", gib(memory_limit),
          f"{PICKER_LIMIT_FACTOR} x the request: room for bursts of long prompts before an OOM kill", PICKER_SOURCE)
    return RoutingPlan(decode_tokens_per_second=rate, longest_stream_seconds=longest,
                       request_timeout_seconds=request_timeout, alb_idle_timeout_seconds=idle,
                       picker_cpu_request_millicores=cpu, picker_memory_request_bytes=memory_request,
                       picker_memory_limit_bytes=memory_limit, picker_prefix_block_size=block,
                       picker_max_prefix_blocks=max_blocks, picker_lru_capacity_per_server=lru,
                       derivations=d.items)

"""Rough single-request latencies of a layout, used for the default latency SLOs of the alert
rules (a user sets real SLOs in the observability values) and for the routing timeouts
(planning/routing.py reads the decode step).

Prefill is compute-bound: 2 FLOPs per active parameter per prompt token, spread over the TP
ranks at a fraction of the datasheet BF16 throughput. Decode is memory-bound: every output token
reads the active weights once, over the TP ranks' memory bandwidth, and PP stages run one after
the other for one token. The SLO leaves room for batching and queueing on top."""

from __future__ import annotations

from typing import NamedTuple

from vllm_eks.catalog.instances import Hardware
from vllm_eks.core.derivations import Derivations
from vllm_eks.model import weights
from vllm_eks.model.architecture import Architecture
from vllm_eks.spec.plan import SloPlan

PREFILL_MFU = 0.4           # fraction of peak tensor throughput a prefill reaches
DECODE_MBU = 0.6            # fraction of peak memory bandwidth a decode step reaches
TYPICAL_PROMPT_TOKENS = 2048
TTFT_HEADROOM, TTFT_FLOOR = 4.0, 0.5
TPOT_HEADROOM, TPOT_FLOOR = 3.0, 0.03
# Without datasheet figures (hardware outside the catalog) the SLOs fall back to these.
DEFAULT_TTFT_SLO, DEFAULT_TPOT_SLO = 2.0, 0.1
TTFT_SOURCE = "default of the TTFT alert; datasheet figures in data/gpus.yaml"
TPOT_SOURCE = "default of the TPOT alert"


def active_parameters(a: Architecture) -> int:
    """Parameters one token passes through: MoE layers count only the routed experts it uses."""
    total = weights.total_parameters(a)
    if a.moe is None:
        return total
    unused = sum(lp.experts for lp in weights.layer_table(a)) * (1 - a.moe.experts_per_token / a.moe.num_experts)
    return int(total - unused)


class DecodeStep(NamedTuple):
    """One memory-bound decode step of a single request."""

    seconds: float
    active_bytes: float          # weight bytes every output token reads
    formula: str                 # the step with its inputs, for derivations
    pp_note: str                 # why PP does not shorten the step ("" without PP)


def decode_step(a: Architecture, hw: Hardware, tp: int, pp: int, weights_total: int) -> DecodeStep | None:
    """Every output token reads the active weights once, over the TP ranks' memory bandwidth at
    DECODE_MBU; PP stages run one after the other for one token. None without a datasheet
    memory bandwidth for the GPU."""
    if not hw.memory_bandwidth:
        return None
    active_bytes = weights_total * active_parameters(a) / weights.total_parameters(a)
    seconds = active_bytes / (tp * hw.memory_bandwidth * DECODE_MBU)
    formula = (f"{active_bytes / 1e9:.1f} GB active weights / (TP {tp} x {hw.memory_bandwidth / 1e9:g} GB/s x "
               f"{DECODE_MBU}) = {seconds * 1000:.1f} ms")
    pp_note = f", PP {pp} stages in turn: the bandwidth of all {tp * pp} GPUs is not used at once" if pp > 1 else ""
    return DecodeStep(seconds, active_bytes, formula, pp_note)


def default_slos(a: Architecture, hw: Hardware, tp: int, pp: int, weights_total: int,
                 max_model_len: int, kv_transfer_seconds: float | None = None) -> SloPlan:
    """The slo section of the Plan: default TTFT and TPOT p99 of the alert rules. A disaggregated
    Plan passes `kv_transfer_seconds` (planning/kv_transfer.py): the first token waits for the
    KV cache to reach the decode engine."""
    d = Derivations()
    if not hw.bf16_tflops or not hw.memory_bandwidth:
        why = f"no datasheet figures for {hw.gpu}: fixed defaults"
        d.add("slo_ttft_p99_seconds", f"{DEFAULT_TTFT_SLO} s", why, TTFT_SOURCE)
        d.add("slo_tpot_p99_seconds", f"{DEFAULT_TPOT_SLO} s", why, TPOT_SOURCE)
        return SloPlan(slo_ttft_p99_seconds=DEFAULT_TTFT_SLO, slo_tpot_p99_seconds=DEFAULT_TPOT_SLO,
                       derivations=d.items)
    active = active_parameters(a)
    prompt = min(max_model_len, TYPICAL_PROMPT_TOKENS)
    prefill = 2 * active * prompt / (tp * hw.bf16_tflops * 1e12 * PREFILL_MFU)
    step = decode_step(a, hw, tp, pp, weights_total)
    assert step is not None  # memory_bandwidth checked above
    decode = step.seconds
    transfer = kv_transfer_seconds or 0.0
    ttft = round(max(TTFT_FLOOR, TTFT_HEADROOM * (prefill + transfer)), 2)
    work = (f"prefill of {prompt} tokens: 2 x {active / 1e9:.1f}B active params x {prompt} / (TP {tp} x "
            f"{hw.bf16_tflops:g} TFLOPS x {PREFILL_MFU}) = {prefill:.3f} s")
    if kv_transfer_seconds is not None:
        # disaggregated: the first token also waits for the KV cache to reach the decode engine
        work = f"({work} + KV transfer {transfer:.3f} s (kv_transfer_seconds))"
    tpot = round(max(TPOT_FLOOR, TPOT_HEADROOM * decode), 3)
    d.add("slo_ttft_p99_seconds", f"{ttft} s",
          f"max({TTFT_FLOOR} s, {TTFT_HEADROOM:g} x {work})", TTFT_SOURCE)
    d.add("slo_tpot_p99_seconds", f"{tpot} s",
          f"max({TPOT_FLOOR} s, {TPOT_HEADROOM:g} x decode step: {step.formula}){step.pp_note}", TPOT_SOURCE)
    return SloPlan(slo_ttft_p99_seconds=ttft, slo_tpot_p99_seconds=tpot, derivations=d.items)

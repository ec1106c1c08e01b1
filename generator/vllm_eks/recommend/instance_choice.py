"""`vllm-eks recommend`: which catalog instance type, and which layout on it, serves a model at
a target most cheaply, by estimate.

Every catalog instance type is planned with every layout the planner accepts on it: each TP that
divides the machine's GPUs and that vLLM allows for the model (decisions.valid_tp), one machine
per copy; and, when no TP fits one machine, the planner's own multi-node layout (TP = the GPUs
of a machine, the fewest pipeline stages that fit, up to --max-nodes-per-replica). Each feasible
layout is then costed at the target:

- one replica sustains `min(max_num_seqs, whole requests its KV cache holds at max_model_len)`
  sequences (the Plan's memory section);
- a decode step of a batch of b sequences takes the longer of reading the active weights and
  b sequences' KV cache over the GPUs' memory bandwidth (latency.decode_step, at DECODE_MBU;
  each sequence holding half the max model len on average) and the 2 FLOPs per active parameter
  and token over the GPUs' BF16 throughput (at PREFILL_MFU), plus, under TP, two all-reduces per
  layer at an assumed small-message latency (ALLREDUCE_SECONDS); pipeline stages run in turn for
  a token (latency.py), so they add memory, not decode speed;
- replicas needed = ceil(concurrency / sustained sequences), or ceil(output tokens/s / what one
  replica decodes at its sustained batch);
- nodes are billed whole: replicas x nodes per replica for multi-node copies, else
  ceil(replicas x TP / GPUs per machine), and single-machine copies fill the nodes paid for (as
  the Plan's replicas do; at a concurrency target never more copies than requests), the
  requests shared out among them; cost per hour = nodes x the node price;
- cost per million output tokens = bench.cost.cost_per_million_tokens(cost per hour, output
  tokens/s achieved at the target): the formula `bench analyze` applies to a measured sweep.

These are estimates of a memory-bound decode, not measurements: `vllm-eks bench analyze --plan`
measures a deployment. The catalog holds on-demand us-east-1 prices only: another region or
spot capacity has no price, and such types are listed with that reason, not with a guessed
figure."""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from rich.table import Table

from vllm_eks.bench.cost import cost_per_million_tokens
from vllm_eks.catalog.instances import Hardware, instance_catalog
from vllm_eks.catalog.models import resolve_model
from vllm_eks.core.errors import InvalidOptionError, VllmEksError
from vllm_eks.core.units import GIB
from vllm_eks.model.architecture import Architecture
from vllm_eks.planning.decisions import MAX_PIPELINE_STAGES, REQUIRED_CONTEXT, Decisions, valid_tp
from vllm_eks.planning.latency import DECODE_MBU, PREFILL_MFU, active_parameters, decode_step
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

DEFAULT_CONCURRENCY = 32
DEFAULT_TOP = 5
# Where the plans of a model given as a local config.json load it from (a path on a volume).
LOCAL_MODEL_SOURCE = "/models/model"
PRICED_REGION = "us-east-1"          # the catalog's prices (data/instances.csv usd_hr_us_east_1)
# Largest targets taken: far above any one deployment, small enough that no sum overflows.
MAX_CONCURRENCY = 10**7
MAX_OUTPUT_TOKENS_PER_SECOND = 1e9
ESTIMATE_NOTE = ("estimate: memory-bound decode from datasheet bandwidth and FLOPS, not a measurement; "
                 "measure a deployment with `vllm-eks bench analyze --plan`")

# A decode step's all-reduce moves a few KiB per sequence, so it costs its latency, not bytes over
# bandwidth: an assumption of the estimate, of the order of NCCL's small-message latency within
# one machine (tens of microseconds; more across PCIe than over NVLink/NVSwitch).
ALLREDUCES_PER_LAYER = 2
ALLREDUCE_SECONDS = {"NVLink": 20e-6, "PCIe": 40e-6}

CapacityType = Literal["on-demand", "spot"]


class Target(BaseModel):
    concurrency: int | None = Field(default=None, description="Requests in flight at once")
    output_tokens_per_second: float | None = Field(default=None, description="Output tokens per second in all")
    defaulted: bool = Field(default=False, description="No target was given: the default concurrency")


class Choice(BaseModel):
    """One feasible layout on one instance type, costed at the target."""

    rank: int
    instance: str
    gpu: str
    gpus_per_node: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    nodes_per_replica: int
    replicas: int
    nodes: int
    max_num_seqs: int
    concurrency_per_replica: int = Field(description="Sequences one replica sustains: min(max_num_seqs, KV capacity)")
    output_tokens_per_second_per_replica: float = Field(
        description="Estimated decode rate of one replica at that batch")
    output_tokens_per_second: float = Field(description="Estimated output tokens/s of the deployment at the target")
    output_tokens_per_second_per_request: float = Field(
        description="Estimated decode rate one request sees at the target")
    usd_per_hour: float
    usd_per_million_output_tokens: float
    plan_command: str = Field(description="The `vllm-eks plan` command of this layout")


class Rejected(BaseModel):
    instance: str
    reason: str


class Recommendation(BaseModel):
    model: str
    max_model_len: int
    max_model_len_default: bool
    target: Target
    capacity_type: CapacityType
    region: str
    max_nodes_per_replica: int
    estimate: str = ESTIMATE_NOTE
    choices: list[Choice] = Field(description="Every feasible, priced layout, cheapest per million output tokens first")
    others: list[Rejected] = Field(description="Each instance type without a choice, with the reason")


@dataclass(frozen=True)
class _Layout:
    hw: Hardware
    tp: int
    pp: int
    max_num_seqs: int
    sustained: int
    kv_bytes_per_token_per_gpu: int
    weights_total: int


def _check(concurrency: int | None, tokens_per_second: float | None, max_model_len: int | None,
           max_nodes_per_replica: int | None, top: int) -> None:
    if concurrency is not None and tokens_per_second is not None:
        raise InvalidOptionError("--concurrency conflicts with --output-tokens-per-second: give one target")
    for flag, value, most in (("--concurrency", concurrency, MAX_CONCURRENCY),
                              ("--output-tokens-per-second", tokens_per_second, MAX_OUTPUT_TOKENS_PER_SECOND),
                              ("--max-model-len", max_model_len, None),
                              ("--max-nodes-per-replica", max_nodes_per_replica, MAX_PIPELINE_STAGES),
                              ("--top", top, None)):
        if value is None:
            continue
        if not value > 0 or math.isinf(value):
            raise InvalidOptionError(f"{flag} must be a finite number > 0, got {value}")
        if most is not None and value > most:
            raise InvalidOptionError(f"{flag} must be at most {most:g}, got {value:g}")


def _layouts(base: PlanRequest, hw: Hardware, max_nodes: int) -> tuple[list[_Layout], str | None]:
    """The feasible layouts of request `base` on its instance type `hw`, or none and why."""
    max_model_len = base.max_model_len
    try:
        dec = Decisions(base)
    except VllmEksError as e:   # the model cannot run on this GPU at all (e.g. no attention backend)
        return [], str(e).removeprefix("--instance: ")
    tps = [t for t in range(1, hw.gpus_per_node + 1) if hw.gpus_per_node % t == 0 and valid_tp(dec.a, t) is None]
    if not tps:
        return [], f"no TP up to {hw.gpus_per_node} suits the model's heads"
    out = []
    for tp in tps:
        if dec.fits(tp, 1, 1):
            out.append(_planned(base.model_copy(update={"tensor_parallel_size": tp, "pipeline_parallel_size": 1}), hw))
    if out:
        return out, None
    if max_nodes > 1:
        try:
            plan_req = base.model_copy(update={"max_nodes_per_replica": max_nodes})
            return [_planned(plan_req, hw)], None
        except VllmEksError:
            pass
    per_node = hw.gpus_per_node * hw.gpu_memory_bytes / GIB
    weights = dec.budget(tps[-1], 1).weights_total / GIB
    where = f"one node ({hw.gpus_per_node} x {hw.gpu})" if max_nodes == 1 else f"{max_nodes} nodes"
    return [], (f"does not fit {where} at {max_model_len} tokens: {weights:.0f} GiB of weights, "
                f"{per_node:.0f} GiB of GPU memory per node")


def _planned(req: PlanRequest, hw: Hardware) -> _Layout:
    p = make_plan(req)
    seqs = p.engine.max_num_seqs
    return _Layout(hw, p.layout.tensor_parallel_size, p.layout.pipeline_parallel_size, seqs,
                   max(1, min(seqs, math.floor(p.memory.max_concurrency))), p.memory.kv_bytes_per_token_per_gpu,
                   p.memory.weights_bytes_total)


def step_seconds(a: Architecture, lay: _Layout, batch: float, max_model_len: int) -> float | None:
    """Seconds of one decode step of `batch` sequences of model `a` on one replica (module
    docstring); None without the GPU's datasheet figures."""
    weights_step = decode_step(a, lay.hw, lay.tp, lay.pp, lay.weights_total)
    if weights_step is None or not lay.hw.memory_bandwidth or not lay.hw.bf16_tflops:
        return None
    bandwidth = lay.hw.memory_bandwidth * DECODE_MBU
    kv = lay.pp * batch * (max_model_len / 2) * lay.kv_bytes_per_token_per_gpu / bandwidth
    compute = 2 * active_parameters(a) * batch / (lay.tp * lay.hw.bf16_tflops * 1e12 * PREFILL_MFU)
    # tensor-parallel ranks sum each layer's attention and MLP outputs: two all-reduces per
    # layer and token step, latency-bound at decode batch sizes, one stage after the other
    allreduce = (ALLREDUCES_PER_LAYER * a.num_layers * ALLREDUCE_SECONDS[_link(lay.hw)]) if lay.tp > 1 else 0.0
    return max(weights_step.seconds + kv, compute) + allreduce


def _link(hw: Hardware) -> str:
    return "NVLink" if "NVLink" in hw.interconnect else "PCIe"


def price(hw: Hardware, capacity_type: CapacityType, region: str) -> tuple[float | None, str]:
    """The node's USD per hour for that capacity type and region, or None and why not."""
    if capacity_type == "spot":
        return None, "no spot price (the catalog holds on-demand prices only)"
    if region != PRICED_REGION:
        return None, f"no price for {region} (the catalog holds {PRICED_REGION} on-demand prices only)"
    if hw.usd_per_hour is None:
        return None, "no price in the catalog"
    return hw.usd_per_hour, ""


def _cost(a: Architecture, lay: _Layout, target: Target, max_model_len: int, usd_node: float) -> dict | None:
    full = step_seconds(a, lay, lay.sustained, max_model_len)
    if full is None:
        return None
    per_replica = lay.sustained / full
    if target.concurrency is not None:
        needed = math.ceil(target.concurrency / lay.sustained)
    else:
        assert target.output_tokens_per_second is not None
        needed = math.ceil(target.output_tokens_per_second / per_replica)
    if lay.pp > 1:
        replicas, nodes = needed, needed * lay.pp
    else:
        # nodes are billed whole, so the copies fill them (as the Plan's replicas do), though
        # never more copies than requests to share out
        nodes = math.ceil(needed * lay.tp / lay.hw.gpus_per_node)
        replicas = max(needed, nodes * (lay.hw.gpus_per_node // lay.tp))
        if target.concurrency is not None:
            replicas = max(needed, min(replicas, target.concurrency))
    if target.concurrency is not None:
        batch = target.concurrency / replicas
        step = step_seconds(a, lay, batch, max_model_len)
        assert step is not None
        achieved = replicas * batch / step
    else:
        assert target.output_tokens_per_second is not None
        achieved = target.output_tokens_per_second
        step = full   # the per-request rate at the sustained batch: the slowest the target sees
    usd = nodes * usd_node
    per_million = cost_per_million_tokens(usd, achieved)
    assert per_million is not None
    return {"replicas": replicas, "nodes": nodes, "output_tokens_per_second_per_replica": round(per_replica, 3),
            "output_tokens_per_second": round(achieved, 3),
            "output_tokens_per_second_per_request": round(1 / step, 3), "usd_per_hour": round(usd, 6),
            "usd_per_million_output_tokens": round(per_million, 6)}


def recommend(model: str, max_model_len: int | None = None, concurrency: int | None = None,
              output_tokens_per_second: float | None = None, region: str = PRICED_REGION,
              capacity_type: CapacityType = "on-demand", max_nodes_per_replica: int | None = None,
              top: int = DEFAULT_TOP, hf_token_file: str | None = None) -> Recommendation:
    _check(concurrency, output_tokens_per_second, max_model_len, max_nodes_per_replica, top)
    resolved = resolve_model(model, hf_token_file)
    a = resolved.architecture
    if max_model_len is not None and max_model_len > a.max_len:
        raise InvalidOptionError(f"--max-model-len {max_model_len} exceeds the model's {a.derived_max_len_why} "
                                 f"({a.max_len}, the longest vLLM accepts)")
    length = max_model_len or min(a.max_len, REQUIRED_CONTEXT)
    max_nodes = max_nodes_per_replica or MAX_PIPELINE_STAGES
    if concurrency is None and output_tokens_per_second is None:
        target = Target(concurrency=DEFAULT_CONCURRENCY, defaulted=True)
    else:
        target = Target(concurrency=concurrency, output_tokens_per_second=output_tokens_per_second)
    model_id = resolved.id
    # A local config.json says nothing of where a pod would load the weights from, and the
    # sizing does not depend on it: the plans take a path on a volume for it.
    source = LOCAL_MODEL_SOURCE if resolved.entry is None and Path(model).exists() else None
    found: list[tuple[_Layout, dict]] = []
    others: list[Rejected] = []
    for hw in sorted(instance_catalog().values(), key=lambda h: h.name):
        layouts, why = _layouts(PlanRequest(model=model, instance=hw.name, max_model_len=length, model_source=source,
                                            hf_token_file=hf_token_file), hw, max_nodes)
        if not layouts:
            others.append(Rejected(instance=hw.name, reason=why or "does not fit"))
            continue
        usd_node, no_price = price(hw, capacity_type, region)
        if usd_node is None:
            others.append(Rejected(instance=hw.name, reason=no_price))
            continue
        costed = [(lay, c) for lay in layouts if (c := _cost(a, lay, target, length, usd_node)) is not None]
        if not costed:
            others.append(Rejected(instance=hw.name, reason=f"no datasheet bandwidth/FLOPS for {hw.gpu}: no estimate"))
            continue
        found += costed
    found.sort(key=lambda lc: (lc[1]["usd_per_million_output_tokens"], lc[1]["usd_per_hour"], lc[0].tp * lc[0].pp,
                               lc[0].hw.name))
    choices = [Choice(rank=i + 1, instance=lay.hw.name, gpu=lay.hw.gpu, gpus_per_node=lay.hw.gpus_per_node,
                      tensor_parallel_size=lay.tp, pipeline_parallel_size=lay.pp, nodes_per_replica=lay.pp,
                      max_num_seqs=lay.max_num_seqs, concurrency_per_replica=lay.sustained,
                      plan_command=_plan_command(model_id, lay, length, source), **c)
               for i, (lay, c) in enumerate(found)]
    shown = {c.instance for c in choices[:top]}
    for name in dict.fromkeys(c.instance for c in choices):
        if name not in shown:
            best = next(c for c in choices if c.instance == name)
            others.append(Rejected(instance=name, reason=(
                f"${best.usd_per_million_output_tokens:.2f} per 1M output tokens at best "
                f"(TP={best.tensor_parallel_size} "
                f"x PP={best.pipeline_parallel_size}, rank {best.rank}): more than the top {top}")))
    return Recommendation(model=model_id, max_model_len=length, max_model_len_default=max_model_len is None,
                          target=target, capacity_type=capacity_type, region=region, max_nodes_per_replica=max_nodes,
                          choices=choices, others=sorted(others, key=lambda r: r.instance))


def _plan_command(model: str, lay: _Layout, length: int, source: str | None) -> str:
    return (f"vllm-eks plan --model {shlex.quote(model)} --instance {lay.hw.name} --tensor-parallel-size {lay.tp} "
            f"--pipeline-parallel-size {lay.pp} --max-model-len {length}"
            + (f" --model-source {source}" if source else ""))


def header(r: Recommendation) -> str:
    t = r.target
    if t.concurrency is not None:
        target = f"{t.concurrency} concurrent requests" + (" (the default)" if t.defaulted else "")
    else:
        target = f"{t.output_tokens_per_second:g} output tokens/s"
    length = f"{r.max_model_len} tokens" + (" (the default: the model's maximum, at most 8192)"
                                            if r.max_model_len_default else "")
    return (f"vllm-eks recommend: {r.model}\n"
            f"  target: {target}, each request up to {length}\n"
            f"  prices: {r.capacity_type}, {r.region} (catalog); "
            f"at most {r.max_nodes_per_replica} node(s) per replica; "
            f"{len(r.choices)} feasible, priced layout(s)\n"
            f"  {r.estimate}\n")


def table(r: Recommendation, top: int = DEFAULT_TOP) -> Table:
    """The top choices, then one line per other instance type with its reason."""
    t = Table(title=f"the top {min(top, len(r.choices))} by estimated $ per 1M output tokens", title_justify="left")
    for col in ("#", "instance", "GPUs", "layout", "replicas", "nodes", "seqs/replica", "tok/s/replica",
                "tok/s/request", "$/h", "$/1M out"):
        t.add_column(col, justify="left" if col in ("instance", "layout") else "right")
    for c in r.choices[:top]:
        t.add_row(str(c.rank), c.instance, f"{c.gpus_per_node} x {c.gpu}",
                  f"TP={c.tensor_parallel_size} x PP={c.pipeline_parallel_size}", str(c.replicas), str(c.nodes),
                  str(c.concurrency_per_replica), f"{c.output_tokens_per_second_per_replica:,.0f}",
                  f"{c.output_tokens_per_second_per_request:,.1f}", f"{c.usd_per_hour:,.2f}",
                  f"{c.usd_per_million_output_tokens:,.2f}")
    return t


def others_text(r: Recommendation) -> str:
    return "".join(f"  {o.instance}: {o.reason}\n" for o in r.others)

"""The parallelism decision (DESIGN §4) and every engine setting, assembled into a Plan.

Decision tree: the model plus a useful KV cache fits one GPU -> TP=1 and replicas; it fits one
machine -> TP = GPUs per machine and replicas; otherwise TP inside a machine and PP across
machines (LeaderWorkerSet), then replicas of that group. TP must divide the attention heads,
and TP never spans machines."""

from __future__ import annotations

import json
import math
from pathlib import Path

from . import budget as budget_mod
from . import weights
from .architecture import DTYPE_BYTES, Architecture
from .pools import plan_pools
from .catalog import ResolvedModel, resolve_model
from .latency import default_slos
from .engine_args import engine_args
from .errors import DoesNotFitError, InvalidOptionError
from .hardware import Hardware, resolve_hardware
from .units import GIB, gib
from .plan import Derivation, Plan, PoolPlan, ServeAutoscaling
from .request import PlanRequest
from .sizing import size_pod

DEFAULT_UTILIZATION = 0.90
DEFAULT_BLOCK_SIZE = 16          # vLLM's default on CUDA
DEFAULT_MAX_NUM_SEQS = 256       # vLLM's default for `vllm serve` on GPUs
DEFAULT_BATCHED_TOKENS = 8192
# A layout is "useful" when it serves this many requests of the required context at once;
# below that a single GPU spends most of its memory on weights and queues everyone else.
USEFUL_CONCURRENCY = 4
# Context the fit decision requires when the user does not pin --max-model-len.
REQUIRED_CONTEXT = 8192
# A typical request's footprint when choosing max_num_seqs: admitting more sequences than the
# KV cache holds at this length only causes preemptions.
TYPICAL_REQUEST_TOKENS = 2048
MAX_PIPELINE_STAGES = 16
# Prefill pools run few sequences at once: a handful of long prompts fills a scheduler step.
PREFILL_MAX_NUM_SEQS = 16
CONTEXT_LADDER = (1048576, 524288, 262144, 131072, 65536, 32768, 16384, 8192, 4096, 2048, 1024)


def _precisions(a: Architecture, req: PlanRequest) -> budget_mod.Precisions:
    ckpt_q = a.quantization
    if req.dtype == "auto":
        dtype = a.checkpoint_dtype if a.checkpoint_dtype in ("bfloat16", "float16") else "bfloat16"
    else:
        dtype = req.dtype
    if req.quantization is not None and ckpt_q is not None and req.quantization != ckpt_q.method:
        raise InvalidOptionError(
            f"--quantization {req.quantization} conflicts with the checkpoint's quantization_config "
            f"({ckpt_q.method}); omit --quantization to use the checkpoint's")
    if req.quantization in ("awq", "gptq") and ckpt_q is None:
        raise InvalidOptionError(
            f"--quantization {req.quantization} needs a checkpoint quantized with {req.quantization.upper()} "
            "(its config.json declares quantization_config); only fp8 can quantize a 16-bit checkpoint at load time")
    if ckpt_q is not None:
        method, bits, scope = ckpt_q.method, ckpt_q.bits, ckpt_q.scope
    elif req.quantization == "fp8":
        method, bits, scope = "fp8", 8.0, "linear"
    else:
        method, bits, scope = None, None, "linear"
    kv_bytes = 1 if req.kv_cache_dtype == "fp8" else DTYPE_BYTES[dtype]
    return budget_mod.Precisions(dtype, DTYPE_BYTES[dtype], method, bits, scope, req.kv_cache_dtype, kv_bytes)


def valid_tp(a: Architecture, tp: int) -> str | None:
    """Why vLLM would refuse this TP, or None."""
    if a.num_attention_heads % tp:
        return f"it must divide the {a.num_attention_heads} attention heads"
    if a.mla is None and a.num_kv_heads % tp and tp % a.num_kv_heads:
        return f"it must divide, or be a multiple of, the {a.num_kv_heads} KV heads"
    return None


def _check_request(req: PlanRequest) -> None:
    def positive(flag: str, v: float | None) -> None:
        if v is not None and v <= 0:
            raise InvalidOptionError(f"{flag} must be > 0, got {v}")
    positive("--tensor-parallel-size", req.tensor_parallel_size)
    positive("--pipeline-parallel-size", req.pipeline_parallel_size)
    positive("--replicas", req.replicas)
    positive("--target-concurrency", req.target_concurrency)
    positive("--max-model-len", req.max_model_len)
    positive("--max-num-seqs", req.max_num_seqs)
    positive("--max-num-batched-tokens", req.max_num_batched_tokens)
    positive("--block-size", req.block_size)
    positive("--kv-cache-memory", req.kv_cache_memory_gib)
    positive("--load-bandwidth-mib-s", req.load_bandwidth_mib_s)
    positive("--prefill-replicas", req.prefill_replicas)
    positive("--decode-replicas", req.decode_replicas)
    u = req.gpu_memory_utilization
    if u is not None and not (0 < u <= 1):
        raise InvalidOptionError(f"--gpu-memory-utilization must be in (0, 1], got {u}")
    if req.block_size is not None and req.block_size & (req.block_size - 1):
        raise InvalidOptionError(f"--block-size must be a power of two (e.g. 16, 32, 128), got {req.block_size}")
    if req.replicas is not None and req.target_concurrency is not None:
        raise InvalidOptionError("--replicas conflicts with --target-concurrency: give one of them")
    if req.kv_cache_memory_gib is not None and req.gpu_memory_utilization is not None:
        raise InvalidOptionError(
            "--kv-cache-memory conflicts with --gpu-memory-utilization: a fixed KV budget skips the utilization-based profile")
    if (req.max_num_seqs and req.max_num_batched_tokens
            and req.max_num_batched_tokens < req.max_num_seqs):
        raise InvalidOptionError(
            f"--max-num-batched-tokens ({req.max_num_batched_tokens}) must be >= --max-num-seqs ({req.max_num_seqs})")


class _Planner:
    def __init__(self, req: PlanRequest):
        _check_request(req)
        self.req = req
        self.model: ResolvedModel = resolve_model(req.model)
        self.a = self.model.architecture
        self.hw: Hardware = resolve_hardware(req.instance, req.gpu_memory_mib, req.gpus_per_node,
                                             req.hardware_name, req.price_per_hour)
        self.p = _precisions(self.a, req)
        self.util = req.gpu_memory_utilization or DEFAULT_UTILIZATION
        self.block = req.block_size or DEFAULT_BLOCK_SIZE
        self.kv_pin = int(req.kv_cache_memory_gib * GIB) if req.kv_cache_memory_gib else None
        if req.max_model_len and req.max_model_len > self.a.max_position_embeddings:
            raise InvalidOptionError(
                f"--max-model-len {req.max_model_len} exceeds the model's max_position_embeddings "
                f"({self.a.max_position_embeddings})")
        self.required_len = req.max_model_len or min(self.a.max_position_embeddings, REQUIRED_CONTEXT)
        self.seqs0 = req.max_num_seqs or DEFAULT_MAX_NUM_SEQS
        self.batched = req.max_num_batched_tokens or max(DEFAULT_BATCHED_TOKENS, self.seqs0)
        if self.batched < self.seqs0:
            raise InvalidOptionError(
                f"--max-num-batched-tokens ({self.batched}) must be >= max_num_seqs ({self.seqs0})")

    def budget(self, tp: int, pp: int, seqs: int | None = None) -> budget_mod.Budget:
        s = budget_mod.Settings(tp, pp, self.util, self.batched, seqs or self.seqs0, self.block, self.kv_pin,
                                self.req.async_scheduling)
        return budget_mod.compute(self.a, self.hw, self.p, s)

    def concurrency(self, b: budget_mod.Budget, length: int) -> float:
        return b.kv_capacity(length).max_concurrency if b.fits_weights else 0.0

    # -- parallelism -------------------------------------------------------------------------
    def node_tp(self) -> int:
        for tp in range(self.hw.gpus_per_node, 0, -1):
            if self.hw.gpus_per_node % tp == 0 and valid_tp(self.a, tp) is None:
                return tp
        return 1

    def choose_layout(self) -> tuple[int, int, str]:
        req, a = self.req, self.a
        tp_pin, pp_pin = req.tensor_parallel_size, req.pipeline_parallel_size
        if tp_pin is not None:
            why = valid_tp(a, tp_pin)
            if why:
                raise InvalidOptionError(f"--tensor-parallel-size {tp_pin} is invalid for {self.model.id}: {why}")
            if tp_pin > self.hw.gpus_per_node:
                raise InvalidOptionError(
                    f"--tensor-parallel-size {tp_pin} exceeds the {self.hw.gpus_per_node} GPUs of {self.hw.name}: "
                    "tensor parallelism stays inside one machine; use --pipeline-parallel-size across machines")
        if pp_pin is not None and pp_pin > a.num_layers:
            raise InvalidOptionError(
                f"--pipeline-parallel-size {pp_pin} exceeds the model's {a.num_layers} layers")
        if tp_pin is not None and pp_pin is not None:
            self.require_fit(tp_pin, pp_pin, pinned=True)
            return tp_pin, pp_pin, "pinned by --tensor-parallel-size and --pipeline-parallel-size"
        if tp_pin is not None:
            for pp in range(1, min(MAX_PIPELINE_STAGES, a.num_layers) + 1):
                if self.fits(tp_pin, pp, 1):
                    return tp_pin, pp, f"TP pinned to {tp_pin}; the fewest pipeline stages that fit"
            self.require_fit(tp_pin, 1, pinned=True)
        if pp_pin is not None:
            tp = self.node_tp()
            self.require_fit(tp, pp_pin, pinned=True)
            return tp, pp_pin, f"PP pinned to {pp_pin}; TP = {tp}, the GPUs of one machine"
        if self.fits(1, 1, USEFUL_CONCURRENCY):
            return 1, 1, (f"weights plus KV for {USEFUL_CONCURRENCY} requests of {self.required_len} tokens fit one GPU: "
                          "TP=1, scale with replicas")
        tp = self.node_tp()
        if self.fits(tp, 1, 1):
            return tp, 1, (f"does not fit one GPU usefully but fits one {self.hw.name}: TP = {tp} "
                           f"(GPUs per machine that divide the heads), scale with replicas")
        for pp in range(2, min(MAX_PIPELINE_STAGES, a.num_layers) + 1):
            if self.fits(tp, pp, 1):
                return tp, pp, (f"does not fit one {self.hw.name}: TP = {tp} inside each machine, "
                                f"PP = {pp} machines (the fewest that fit)")
        self.require_fit(tp, min(MAX_PIPELINE_STAGES, a.num_layers), pinned=False)
        raise AssertionError("unreachable")

    # -- context and batch -------------------------------------------------------------------
    def choose_max_model_len(self, b: budget_mod.Budget) -> tuple[int, str]:
        if self.req.max_model_len:
            return self.req.max_model_len, "pinned by --max-model-len"
        limit = self.a.max_position_embeddings
        ladder = [limit] + [n for n in CONTEXT_LADDER if n < limit]
        for want in (USEFUL_CONCURRENCY, 1):
            for n in ladder:
                if self.concurrency(b, n) >= want:
                    return n, (f"the longest context (model maximum {limit}, then powers of two) at which the KV cache "
                               f"still holds {want} concurrent full-length requests")
        return self.required_len, "the required context"

    def choose_max_num_seqs(self, b: budget_mod.Budget) -> tuple[int, str]:
        if self.req.max_num_seqs:
            return self.req.max_num_seqs, "pinned by --max-num-seqs"
        tokens = b.kv_capacity(1).slots
        fit = tokens // TYPICAL_REQUEST_TOKENS
        seqs = max(1, min(DEFAULT_MAX_NUM_SEQS, fit // 8 * 8 if fit >= 8 else fit))
        return seqs, (f"min({DEFAULT_MAX_NUM_SEQS} (vLLM default), KV tokens {tokens} / {TYPICAL_REQUEST_TOKENS} "
                      "typical tokens per request, rounded down to a multiple of 8): more running sequences than "
                      "the cache holds only preempt each other")

    def fits(self, tp: int, pp: int, min_concurrency: float) -> bool:
        return self.concurrency(self.budget(tp, pp), self.required_len) >= min_concurrency

    def require_fit(self, tp: int, pp: int, pinned: bool) -> None:
        b = self.budget(tp, pp)
        if self.concurrency(b, self.required_len) >= 1:
            return
        raise DoesNotFitError(self.shortfall(b, tp, pp))

    def shortfall(self, b: budget_mod.Budget, tp: int, pp: int) -> str:
        w = max(b.stages, key=lambda s: s.weights)
        usable = w.requested - w.over.activation_peak - w.over.non_torch - w.over.cudagraph
        per_token = max(s.layout.bytes_per_token for s in b.stages)
        need = w.weights + self.required_len * per_token if self.kv_pin is None else 0
        what = (f"{self.model.id} ({self.p.quantization or self.p.dtype}) does not fit {self.hw.name} "
                f"with TP={tp} x PP={pp}: ")
        if not b.fits_weights:
            short = need - usable
            what += (f"weights need {gib(w.weights)} per GPU plus {gib(self.required_len * per_token)} KV for one "
                     f"{self.required_len}-token request, but {gib(usable)} of each {gib(self.hw.gpu_memory_bytes)} GPU "
                     f"is usable at gpu-memory-utilization {self.util} (short by {gib(short)} per GPU, "
                     f"{gib(short * tp * pp)} per replica)")
        else:
            cap = b.kv_capacity(self.required_len)
            what += (f"the KV cache holds {cap.slots} token slots, less than one {self.required_len}-token request")
        return what + "; options: " + "; ".join(self.alternatives(tp, pp))

    def alternatives(self, tp: int, pp: int) -> list[str]:
        out = []
        for more_pp in range(pp + 1, min(MAX_PIPELINE_STAGES, self.a.num_layers) + 1):
            if self.fits(tp, more_pp, 1):
                out.append(f"more nodes: TP={tp} x PP={more_pp} over {more_pp} {self.hw.name} "
                           f"(--pipeline-parallel-size {more_pp})")
                break
        if self.p.quantization is None:
            for label, bits in (("fp8", 8.0), ("a 4-bit AWQ/GPTQ checkpoint", 4 + 20 / 128)):
                alt = budget_mod.Precisions(self.p.dtype, self.p.dtype_bytes, "x", bits, "linear",
                                            self.p.kv_cache_dtype, self.p.kv_dtype_bytes)
                s = budget_mod.Settings(tp, pp, self.util, self.batched, self.seqs0, self.block, self.kv_pin,
                                        self.req.async_scheduling)
                b = budget_mod.compute(self.a, self.hw, alt, s)
                if b.fits_weights and b.kv_capacity(self.required_len).max_concurrency >= 1:
                    flag = "--quantization fp8" if bits == 8.0 else "--model <awq/gptq checkpoint>"
                    out.append(f"quantize: {label} fits TP={tp} x PP={pp} ({flag})")
                    break
        bigger = [h for h in _catalog_instances() if h.gpus_per_node * h.gpu_memory_bytes
                  > self.hw.gpus_per_node * self.hw.gpu_memory_bytes]
        for h in sorted(bigger, key=lambda h: (h.usd_per_hour is None, h.usd_per_hour or 0)):
            trial = self.req.model_copy(update={"instance": h.name, "tensor_parallel_size": None,
                                                "pipeline_parallel_size": 1, "gpu_memory_mib": None,
                                                "gpus_per_node": None, "hardware_name": None})
            try:
                other = _Planner(trial)
            except InvalidOptionError:
                continue
            if not other.fits(other.node_tp(), 1, 1):
                continue
            out.append(f"bigger instance: one {h.name} (--instance {h.name})")
            break
        if self.req.max_model_len:
            out.append("shorter context: lower --max-model-len")
        return out or ["none found in the catalog: use more nodes with a larger --pipeline-parallel-size"]


def _catalog_instances():
    from .hardware import instance_catalog
    return list(instance_catalog().values())


def make_plan(req: PlanRequest) -> Plan:
    """Decide the layout and every engine and pod setting for a request; errors name the flag."""
    return _assemble(_Planner(req))


def _assemble(planner: _Planner) -> Plan:
    """The Plan of the decisions `planner` makes, with a derivation for every number."""
    a, hw, p, req = planner.a, planner.hw, planner.p, planner.req
    tp, pp, layout_why = planner.choose_layout()
    first = planner.budget(tp, pp)
    seqs, seqs_why = planner.choose_max_num_seqs(first)
    b = planner.budget(tp, pp, seqs)
    max_len, len_why = planner.choose_max_model_len(b)
    cap = b.kv_capacity(max_len)
    worst = b.worst
    multi = pp > 1
    gpus_per_pod = tp
    nodes = pp
    if req.replicas is not None:
        replicas, rep_why = req.replicas, "pinned by --replicas"
    elif req.target_concurrency is not None:
        replicas = max(1, math.ceil(req.target_concurrency / max(cap.max_concurrency, 1e-9)))
        rep_why = f"ceil(target concurrency {req.target_concurrency} / {cap.max_concurrency:.2f} per replica)"
    elif multi:
        replicas, rep_why = 1, "one model copy; raise --replicas or --target-concurrency for more groups"
    else:
        replicas = max(1, hw.gpus_per_node // gpus_per_pod)
        rep_why = (f"{hw.gpus_per_node} GPUs per node / {gpus_per_pod} per pod: a node is billed whole, "
                   "so fill it")
    downloads = not (req.model_source or "").startswith(("s3://", "/"))
    checkpoint = b.weights_total
    disaggregated = req.topology == "disaggregated"
    if disaggregated and multi:
        raise InvalidOptionError(
            f"--topology disaggregated needs one model copy per node, but {planner.model.id} needs "
            f"{pp} {hw.name} nodes; choose a larger instance or --topology auto")
    if disaggregated and hw.efa_max == 0:
        with_efa = sorted(h.name for h in _catalog_instances() if h.efa_max > 0)
        raise InvalidOptionError(
            f"--topology disaggregated moves the KV cache over EFA, and {hw.name} has no EFA interface "
            f"(instances with EFA: {', '.join(with_efa)})")
    sizing = size_pod(hw, gpus_per_pod, tp, multi or disaggregated, checkpoint, nodes, downloads,
                      int(req.load_bandwidth_mib_s * 1024**2) if req.load_bandwidth_mib_s else None)
    cost = None
    if hw.usd_per_hour is not None:
        cost = round(hw.usd_per_hour * nodes * gpus_per_pod / hw.gpus_per_node, 4)
    source = req.model_source or planner.model.source
    served = req.served_model_name or (planner.model.entry.hf_repo if planner.model.entry
                                       else Path(planner.model.source).name or "model")
    args = engine_args(
        tp=tp, pp=pp, dtype=p.dtype, quantization=(req.quantization if a.quantization is None else None),
        kv_cache_dtype=p.kv_cache_dtype, max_model_len=max_len, gpu_memory_utilization=planner.util,
        kv_cache_memory_bytes=planner.kv_pin, max_num_seqs=seqs, max_num_batched_tokens=planner.batched,
        block_size=planner.block, served_model_name=served, shutdown_timeout=sizing.shutdown_timeout_seconds,
        s3=source.startswith("s3://"), async_scheduling=req.async_scheduling)
    topology = "multi-node" if multi else "single-node"
    serve_autoscaling = prefill = decode = kv_transfer = None
    if req.topology == "ray-serve":
        topology = "ray-serve"
        target = max(1, seqs // 2)
        ceiling = replicas if req.replicas is not None else max(2, replicas)
        serve_autoscaling = ServeAutoscaling(min_replicas=1, max_replicas=ceiling, target_ongoing_requests=target,
                                             min_worker_pods=nodes, max_worker_pods=ceiling * nodes)
    elif disaggregated:
        topology = "disaggregated"
        kv_transfer = {"kv_connector": "NixlConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {"backends": ["LIBFABRIC"]}}
        decode_n = req.decode_replicas or replicas
        prefill_n = req.prefill_replicas or max(1, math.ceil(decode_n / 2))
        prefill_seqs = min(seqs, PREFILL_MAX_NUM_SEQS)
        prefill = PoolPlan(role="prefill", replicas=prefill_n, max_num_seqs=prefill_seqs,
                           max_num_batched_tokens=planner.batched,
                           engine_args=_pool_args(args, prefill_seqs, kv_transfer))
        decode = PoolPlan(role="decode", replicas=decode_n, max_num_seqs=seqs,
                          max_num_batched_tokens=planner.batched, engine_args=_pool_args(args, seqs, kv_transfer))
    if (req.prefill_replicas or req.decode_replicas) and not disaggregated:
        raise InvalidOptionError("--prefill-replicas/--decode-replicas need --topology disaggregated")
    cap_plan = plan_pools(
        topology=topology, replicas=replicas,
        serve_max=serve_autoscaling.max_replicas if serve_autoscaling else None,
        prefill_replicas=prefill.replicas if prefill else None, decode_replicas=decode.replicas if decode else None,
        nodes_per_replica=nodes, gpus_per_pod=gpus_per_pod, gpus_per_node=hw.gpus_per_node,
        ephemeral_bytes=sizing.ephemeral_bytes, max_num_seqs=seqs, startup_seconds=sizing.startup_seconds)
    slos = default_slos(a, hw, tp, pp, b.weights_total, max_len)
    prec = weights.precision_for(a, p.dtype_bytes, p.quant_bits, p.quant_scope)
    per_tok = max(s.layout.bytes_per_token for s in b.stages)
    lay = worst.layout
    d: list[Derivation] = []

    def add(key: str, value: str, formula: str, source: str = "") -> None:
        d.append(Derivation(key=key, value=value, formula=formula, source=source))

    add("gpu_memory_bytes", gib(hw.gpu_memory_bytes), f"CUDA-visible total of one {hw.gpu}", hw.gpu_memory_source)
    add("tensor_parallel_size / pipeline_parallel_size", f"TP={tp} x PP={pp}", layout_why, "DESIGN §4 decision tree")
    add("weights_bytes_total", gib(b.weights_total),
        f"{weights.total_parameters(a):,} parameters: embeddings/norms x {prec.dense} B, attention x {prec.attention} B, "
        f"MLP x {prec.mlp} B, experts x {prec.experts} B", "bytes per parameter of the precision vLLM loads")
    add("weights_bytes_per_gpu", gib(worst.weights),
        f"linear layers / TP {tp}, layers of the largest of {pp} stage(s), embedding on the first and LM head on the last")
    kv_formula = (f"MLA: (kv_lora_rank {a.mla.kv_lora_rank} + rope {a.mla.qk_rope_head_dim}) x {p.kv_dtype_bytes} B x {lay.layers_on_rank} layers"
                  if a.mla else
                  f"2 x {max(1, a.num_kv_heads // tp)} KV heads/rank x head_dim {a.head_dim} x {p.kv_dtype_bytes} B x {lay.layers_on_rank} layers")
    add("kv_bytes_per_token_per_gpu", f"{per_tok:,} B", kv_formula,
        "KV heads are replicated when fewer than TP ranks; MLA latents are not split by TP")
    if len(lay.groups) > 1:
        add("kv_cache_groups", f"{len(lay.groups)} groups of {lay.group_size} layers",
            ", ".join(f"{n} {'full' if w is None else f'window {w}'}" for n, w in lay.groups),
            "vLLM hybrid allocator: sliding-window layers keep at most window + batch tokens")
    if planner.kv_pin is None:
        add("requested_bytes", gib(worst.requested), f"{gib(hw.gpu_memory_bytes)} x gpu_memory_utilization {planner.util}")
        add("activation_peak_bytes", gib(worst.over.activation_peak), worst.over.activation_formula,
            "profile run of max_num_batched_tokens (docs/memory-model.md)")
        add("non_torch_bytes", gib(worst.over.non_torch), worst.over.non_torch_formula)
        add("cudagraph_bytes", gib(worst.over.cudagraph), worst.over.cudagraph_formula)
        add("available_kv_cache_bytes_per_gpu", gib(worst.available),
            "requested - weights - activation peak - non-torch - CUDA graphs")
    else:
        add("available_kv_cache_bytes_per_gpu", gib(worst.available), "pinned by --kv-cache-memory (vLLM --kv-cache-memory-bytes)")
    block_bytes = lay.bytes_per_token_per_layer * planner.block * lay.group_size
    add("kv_cache_blocks", f"{cap.num_blocks:,}", f"floor({worst.available:,} B / ({lay.bytes_per_token_per_layer} B x block {planner.block} x {lay.group_size} layers = {block_bytes:,} B))")
    add("kv_cache_tokens", f"{cap.tokens:,}", f"int(max_concurrency {cap.max_concurrency:.4f} x max_model_len {max_len})",
        "vLLM 0.32 get_kv_cache_capacity; the cache holds "
        f"{cap.slots:,} token slots ({cap.num_blocks:,} blocks / {len(lay.groups)} group(s) x block_size {planner.block})")
    add("max_model_len", str(max_len), len_why)
    add("max_concurrency", f"{cap.max_concurrency:.2f}x", f"{cap.num_blocks:,} blocks / {cap.blocks_per_request} blocks per {max_len}-token request")
    add("max_num_seqs", str(seqs), seqs_why)
    add("max_num_batched_tokens", str(planner.batched), "pinned" if req.max_num_batched_tokens else
        f"{DEFAULT_BATCHED_TOKENS} with chunked prefill: long prompts are split, so it need not reach max_model_len")
    add("replicas", str(replicas), rep_why)
    for key, note in sizing.notes.items():
        add(key, _fmt_sizing(key, sizing), note)
    if serve_autoscaling is not None:
        add("serve_autoscaling", f"{serve_autoscaling.min_replicas}..{serve_autoscaling.max_replicas} replicas, "
            f"target {serve_autoscaling.target_ongoing_requests} ongoing requests",
            f"min 1, max = {'--replicas' if req.replicas is not None else f'max(2, replicas {replicas})'}, "
            f"target = max_num_seqs {seqs} / 2",
            "Ray Serve scales model replicas; half the running-sequence cap leaves room for bursts")
    if prefill is not None and decode is not None:
        add("prefill/decode pools", f"{prefill.replicas} prefill + {decode.replicas} decode",
            f"decode = replicas {decode.replicas}; prefill = ceil(decode / 2); prefill max_num_seqs = "
            f"min({seqs}, {PREFILL_MAX_NUM_SEQS})",
            "prefill is compute-bound: a few long prompts fill a scheduler step, and each prefill pass is short; "
            "decode is memory-bound: it holds every running sequence's KV cache, so it gets the larger pool")
    add("autoscaling_min_replicas / autoscaling_max_replicas",
        f"{cap_plan.min_replicas}..{cap_plan.max_replicas}", f"min = replicas; max = {cap_plan.max_replicas_why}")
    add("pool_nodes", str(cap_plan.pool_nodes),
        f"{cap_plan.max_replicas} replicas x {nodes} node(s), sharing nodes when a pod uses {gpus_per_pod} of "
        f"{hw.gpus_per_node} GPUs")
    add("pool_gpu_limit", str(cap_plan.pool_gpu_limit),
        f"(pool nodes {cap_plan.pool_nodes} + one replica group {nodes}) x {hw.gpus_per_node} GPUs",
        "Karpenter counts whole nodes; the extra group lets a replacement node or a surge pod start")
    add("root_volume_bytes", gib(cap_plan.root_volume_bytes),
        f"20 GiB OS + 30 GiB image + ephemeral {gib(sizing.ephemeral_bytes)}, rounded up to 10 GiB")
    add("queue_alert_threshold", str(cap_plan.queue_alert_threshold),
        f"max(2 x KEDA target 5, max_num_seqs {seqs} / 4)",
        "the queue alert means autoscaling is not keeping up, not that it is about to act")
    add("scale_up_period_seconds", f"{cap_plan.scale_up_period_seconds} s",
        "startup probe budget, within [60, 1800] s", "new replicas serve before the HPA adds more")
    if multi:
        add("expected_bus_bandwidth_gbytes_per_s", f"{hw.network_mbps / 8000:g} GB/s",
            f"network rating {hw.network_mbps} Mbit/s / 8000",
            "the all-reduce diagnostic fails far below it: NCCL fell back to TCP")
    add("slo_ttft_p99_seconds", f"{slos.ttft_seconds} s", slos.ttft_formula,
        "default of the TTFT alert; datasheet figures in data/gpus.yaml")
    add("slo_tpot_p99_seconds", f"{slos.tpot_seconds} s", slos.tpot_formula, "default of the TPOT alert")
    if cost is not None:
        add("cost_per_hour_usd", f"${cost:.2f}", f"${hw.usd_per_hour}/h x {nodes} node(s) x {gpus_per_pod}/{hw.gpus_per_node} GPUs",
            "on-demand us-east-1 (override with --price-per-hour)")

    return Plan(
        model=planner.model.id, model_source=source, served_model_name=served, instance=hw.name, gpu=hw.gpu,
        gpus_per_node=hw.gpus_per_node, gpu_memory_bytes=hw.gpu_memory_bytes,
        gpu_interconnect=hw.interconnect, nvlink="nvlink" in hw.interconnect.lower(),
        expected_bus_bandwidth_gbytes_per_s=hw.network_mbps / 8000,
        topology=topology,
        tensor_parallel_size=tp, pipeline_parallel_size=pp, nodes_per_replica=nodes, gpus_per_pod=gpus_per_pod,
        replicas=replicas, dtype=p.dtype, quantization=p.quantization, kv_cache_dtype=p.kv_cache_dtype,
        weights_bytes_total=b.weights_total, weights_bytes_per_gpu=max(s.weights for s in b.stages),
        activation_peak_bytes=worst.over.activation_peak, non_torch_bytes=worst.over.non_torch,
        cudagraph_bytes=worst.over.cudagraph, kv_bytes_per_token_per_gpu=per_tok, block_size=planner.block,
        available_kv_cache_bytes_per_gpu=worst.available, kv_cache_blocks=cap.num_blocks,
        kv_cache_tokens=cap.tokens, max_model_len=max_len, max_concurrency=round(cap.max_concurrency, 2),
        gpu_memory_utilization=planner.util, kv_cache_memory_bytes=planner.kv_pin, max_num_seqs=seqs,
        max_num_batched_tokens=planner.batched, enable_chunked_prefill=True, enable_prefix_caching=True,
        shm_size_bytes=sizing.shm_bytes, efa_devices_per_pod=sizing.efa_devices,
        cpu_request_millicores=sizing.cpu_millicores, memory_request_bytes=sizing.memory_bytes,
        ephemeral_storage_bytes=sizing.ephemeral_bytes, load_bandwidth_bytes_per_s=sizing.load_bandwidth,
        startup_probe_seconds=sizing.startup_seconds, shutdown_timeout_seconds=sizing.shutdown_timeout_seconds,
        prestop_seconds=sizing.prestop_seconds, termination_grace_period_seconds=sizing.grace_seconds,
        autoscaling_min_replicas=cap_plan.min_replicas, autoscaling_max_replicas=cap_plan.max_replicas,
        pool_nodes=cap_plan.pool_nodes, pool_gpu_limit=cap_plan.pool_gpu_limit,
        root_volume_bytes=cap_plan.root_volume_bytes, queue_alert_threshold=cap_plan.queue_alert_threshold,
        scale_up_period_seconds=cap_plan.scale_up_period_seconds,
        slo_ttft_p99_seconds=slos.ttft_seconds, slo_tpot_p99_seconds=slos.tpot_seconds,
        cost_per_hour_usd=cost, engine_args=args, serve_autoscaling=serve_autoscaling, prefill=prefill,
        decode=decode, kv_transfer_config=kv_transfer, derivations=d)


def _pool_args(args: list[str], max_num_seqs: int, kv_transfer: dict) -> list[str]:
    out = list(args)
    out[out.index("--max-num-seqs") + 1] = str(max_num_seqs)
    return out + ["--kv-transfer-config", json.dumps(kv_transfer, separators=(",", ":"))]


def _fmt_sizing(key: str, s) -> str:
    return {
        "shm_size_bytes": gib(s.shm_bytes),
        "cpu_request_millicores": f"{s.cpu_millicores}m",
        "memory_request_bytes": gib(s.memory_bytes),
        "ephemeral_storage_bytes": gib(s.ephemeral_bytes),
        "startup_probe_seconds": f"{s.startup_seconds} s",
        "termination_grace_period_seconds": f"{s.grace_seconds} s",
        "efa_devices_per_pod": str(s.efa_devices),
    }.get(key, "")


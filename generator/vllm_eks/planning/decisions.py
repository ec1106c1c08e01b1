"""The planner's decisions: the parallelism layout, the context length, the batch limits,
the replica count and the topology-specific sections (Ray Serve autoscaling, prefill/decode
phases), each with its derivations.

Decision tree: the model plus a useful KV cache fits one GPU -> TP=1 and replicas; it fits one
machine -> TP = GPUs per machine and replicas; otherwise TP inside a machine and PP across
machines (LeaderWorkerSet), then replicas of that group. TP must divide the attention heads,
and TP never spans machines."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

from vllm_eks.catalog.instances import Hardware, instance_catalog, resolve_hardware
from vllm_eks.catalog.models import ResolvedModel, resolve_model
from vllm_eks.core.derivations import Derivations
from vllm_eks.core.errors import DoesNotFitError, InvalidOptionError
from vllm_eks.core.topology import ON_RAY
from vllm_eks.core.units import GIB, gib
from vllm_eks.memory import budget as budget_mod
from vllm_eks.memory import kvcache
from vllm_eks.model import attention
from vllm_eks.model.architecture import DTYPE_BYTES, Architecture
from vllm_eks.planning.kv_transfer import KvTransfer
from vllm_eks.spec import engine_versions
from vllm_eks.spec.engine_settings import EngineSettings, engine_settings
from vllm_eks.spec.plan import EnginePlan, LayoutPlan, PhasePlan, ServeAutoscaling
from vllm_eks.spec.request import DEFAULT_MAX_NUM_SEQS, PlanRequest

DEFAULT_UTILIZATION = 0.90
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


def _precisions(a: Architecture, req: PlanRequest, compute_capability: tuple[int, int] | None = None,
                gpu: str = "") -> budget_mod.Precisions:
    ckpt_q = a.quantization
    # vLLM 0.32 vllm/platforms/cuda.py supported_dtypes: bfloat16 from SM 8.0; Pascal to Turing
    # float16 and float32. vllm/config/model.py _resolve_auto_dtype: `auto` keeps the checkpoint's
    # dtype when the GPU supports it, else (and for float32 checkpoints) the first supported one.
    no_bf16 = compute_capability is not None and compute_capability < (8, 0)
    cc = ".".join(map(str, compute_capability)) if compute_capability else ""
    if req.dtype == "auto":
        dtype = a.checkpoint_dtype if a.checkpoint_dtype in ("bfloat16", "float16") else "bfloat16"
        if no_bf16 and dtype == "bfloat16":
            dtype = "float16"
    else:
        dtype = req.dtype
        if no_bf16 and dtype == "bfloat16":   # cuda.py check_if_supports_dtype raises
            raise InvalidOptionError(
                f"--dtype bfloat16: vLLM runs bfloat16 only on GPUs of compute capability 8.0 or more, "
                f"{gpu} is SM {cc}; use --dtype float16 or auto")
    if no_bf16 and ckpt_q is not None and ckpt_q.method == "mxfp4":
        # quantization/mxfp4.py Mxfp4Config.get_min_capability 80 (and bfloat16 activations only)
        raise InvalidOptionError(
            f"--instance: vLLM runs MXFP4 checkpoints only on GPUs of compute capability 8.0 or more, "
            f"{gpu} is SM {cc}; use an A10G, L4, L40S, A100, H100, H200, B200 or B300 instance")
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
    return a.state.tp_problem(tp) if a.state is not None else None


class Decisions:
    def __init__(self, req: PlanRequest):
        self.req = req
        self.model: ResolvedModel = resolve_model(req.model, req.hf_token_file)
        if self.model.hf_repo is None and not req.model_source:
            # The folder holding config.json is on this machine, not in the pod.
            raise InvalidOptionError(
                f"--model {req.model} is a local config.json: say where the pod loads the weights from with "
                "--model-source (a Hugging Face repo id such as org/name, s3://bucket/prefix, or a path on a PVC "
                "such as /models/name)")
        self.a = self.model.architecture
        # the vLLM release of the image that will run the model: what the memory terms and the
        # engine settings are for (spec/engine_versions.py)
        self.vllm_version = engine_versions.version_for(req.topology, req.vllm_version)
        self._budgets: dict[tuple[int, int, int], budget_mod.Budget] = {}
        self._shapes: dict[tuple[int, int], budget_mod.Shape] = {}
        self.hw: Hardware = resolve_hardware(req.instance, req.gpu_memory_mib, req.gpus_per_node,
                                             req.hardware_name, req.price_per_hour, region=req.region,
                                             vcpus=req.vcpus, memory_gib=req.memory_gib, max_pods=req.max_pods)
        self.p = _precisions(self.a, req, self.hw.compute_capability, self.hw.gpu)
        self.util = req.gpu_memory_utilization or DEFAULT_UTILIZATION
        # The KV block size: the attention backend vLLM selects decides it (attention.py); the KV
        # sizing and the --block-size flag both read this one decision.
        self.block_rule = attention.block_size(self.a, self.hw.gpu, self.hw.compute_capability,
                                               self.p.kv_cache_dtype, req.block_size)
        self.block = self.block_rule.block_size
        pin = req.kv_cache_memory_gib
        if pin is not None and pin * GIB >= self.hw.gpu_memory_bytes:
            raise InvalidOptionError(
                f"--kv-cache-memory {req.kv_cache_memory_gib:g} GiB is more than one GPU of {self.hw.name} holds "
                f"({gib(self.hw.gpu_memory_bytes)}); the pin is per GPU, beside that GPU's share of the weights")
        self.kv_pin = int(pin * GIB) if pin is not None else None
        # vLLM 0.32 vllm/config/model.py _get_and_verify_max_len refuses a longer max_model_len than
        # it derives from the config (rope scaling included: model/rope.py)
        if req.max_model_len and req.max_model_len > self.a.max_len:
            raise InvalidOptionError(
                f"--max-model-len {req.max_model_len} exceeds the model's {self.a.derived_max_len_why} "
                f"({self.a.max_len}, the longest vLLM accepts)")
        self.required_len = req.max_model_len or min(self.a.max_len, REQUIRED_CONTEXT)
        self.seqs0 = req.max_num_seqs or DEFAULT_MAX_NUM_SEQS
        self.batched = req.max_num_batched_tokens or max(DEFAULT_BATCHED_TOKENS, self.seqs0)

    def budget(self, tp: int, pp: int, seqs: int | None = None) -> budget_mod.Budget:
        """The budget of layout TP x PP at `seqs` sequences (default: the starting max_num_seqs).
        Everything else it depends on is fixed when the Decisions are made, so each layout and
        sequence count is computed once per plan: choosing the layout and settling max_num_seqs
        ask for the same budgets many times, and the weights and KV layout of a layout do not change
        with the sequence count. The memos live and die with this object."""
        key = (tp, pp, seqs or self.seqs0)
        b = self._budgets.get(key)
        if b is None:
            s = budget_mod.Settings(tp, pp, self.util, self.batched, key[2], self.block_for(tp), self.kv_pin,
                                    self.req.async_scheduling, attention_backend=self.block_rule.backend,
                                    vllm_version=self.vllm_version)
            b = self._budgets[key] = budget_mod.compute(self.a, self.hw, self.p, s, self._shape(tp, pp))
        return b

    def _shape(self, tp: int, pp: int) -> budget_mod.Shape:
        sh = self._shapes.get((tp, pp))
        if sh is None:
            sh = self._shapes[(tp, pp)] = budget_mod.shape(self.a, self.hw, self.p, tp, pp)
        return sh

    def block_for(self, tp: int) -> int:
        """The block size vLLM runs with at this TP: the backend's (self.block), raised for a
        hybrid until an attention page holds one recurrent state (kvcache.attention_block_size)."""
        return kvcache.attention_block_size(self.a, tp, self.p.kv_dtype_bytes, self.p.dtype_bytes, self.block)

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
            return 1, 1, (f"weights plus KV for {USEFUL_CONCURRENCY} requests of {self.required_len} tokens "
                          "fit one GPU: TP=1, scale with replicas")
        tp = self.node_tp()
        if self.fits(tp, 1, 1):
            return tp, 1, (f"does not fit one GPU usefully but fits one {self.hw.name}: TP = {tp} "
                           f"(GPUs per machine that divide the heads), scale with replicas")
        self._refuse_nodes_for_kv_pin(tp, 1)
        most = self.max_stages()
        for pp in range(2, most + 1):
            if self.fits(tp, pp, 1):
                return tp, pp, (f"does not fit one {self.hw.name}: TP = {tp} inside each machine, "
                                f"PP = {pp} machines (the fewest that fit, "
                                "--max-nodes-per-replica 1 forbids more than one)")
            self._refuse_nodes_for_kv_pin(tp, pp)
        self.require_fit(tp, most, pinned=False)
        raise AssertionError("unreachable")

    def max_stages(self) -> int:
        """Most machines one copy may span: the user's limit, the layers, and 16."""
        return min(MAX_PIPELINE_STAGES, self.a.num_layers, self.req.max_nodes_per_replica or MAX_PIPELINE_STAGES)

    def _refuse_nodes_for_kv_pin(self, tp: int, pp: int) -> None:
        """Machines are added for weights, never for a pinned KV cache: once the weights fit
        `pp` machines, a pin that does not fit beside them, or holds less than one request, is
        what cannot hold."""
        if self.kv_pin is None:
            return
        b = self.budget(tp, pp)
        room = min(st.pin_room for st in b.stages)
        pin = f"--kv-cache-memory {self.req.kv_cache_memory_gib:g} GiB per GPU"
        if not b.fits_weights and room > 0:
            raise DoesNotFitError(
                f"{pin} does not fit beside the weights: at TP={tp} x PP={pp} each GPU of {self.hw.name} has "
                f"{gib(room)} left after the weights and overheads; pin at most that, or drop the pin")
        if b.fits_weights:
            per_token = max(s.layout.bytes_per_token for s in b.stages)
            raise DoesNotFitError(
                f"{pin} holds {b.kv_capacity(1).slots:,} tokens at TP={tp} x PP={pp}, less than one "
                f"{self.required_len}-token request; pin at least {gib(self.required_len * per_token)} "
                "or lower --max-model-len")

    # -- context and batch -------------------------------------------------------------------
    def choose_max_model_len(self, b: budget_mod.Budget) -> tuple[int, str]:
        if self.req.max_model_len:
            return self.req.max_model_len, "pinned by --max-model-len"
        limit = self.a.max_len
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

    def settle_max_num_seqs(self, tp: int, pp: int) -> tuple[int, str]:
        """max_num_seqs chosen from the budget at that very max_num_seqs: the sampler and the
        CUDA-graph capture sizes grow with it, so the cache shrinks as it grows. The largest
        candidate (1-7, then multiples of 8 up to 256) whose own budget still holds that many
        typical requests; the rule is monotone, so a bisection finds it."""
        if self.req.max_num_seqs:
            return self.choose_max_num_seqs(self.budget(tp, pp))
        candidates = list(range(1, 8)) + list(range(8, DEFAULT_MAX_NUM_SEQS + 1, 8))
        # More sequences never leave more KV cache (tests/unit/test_planner_memo.py), so the count
        # chosen from the budget at the most sequences holds its own requests (a lower bound),
        # and none above the count chosen at the fewest can (an upper bound): the bisection
        # only searches between them, often nothing at all.
        lo = candidates.index(self.choose_max_num_seqs(self.budget(tp, pp, candidates[-1]))[0])
        hi = candidates.index(self.choose_max_num_seqs(self.budget(tp, pp, candidates[0]))[0])
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.choose_max_num_seqs(self.budget(tp, pp, candidates[mid]))[0] >= candidates[mid]:
                lo = mid
            else:
                hi = mid - 1
        seqs = candidates[lo]
        _, why = self.choose_max_num_seqs(self.budget(tp, pp, seqs))
        return seqs, why + f" (KV tokens of the budget at max_num_seqs {seqs})"

    def _weights_overflow(self, tp: int, pp: int) -> bool:
        """Whether some stage's weights alone fill its GPUs at TP x PP, so no budget there can fit:
        the stages share every layer of the one-stage layout (and the last stage keeps its own
        head), so the largest holds at least 1/PP of its per-GPU bytes; the whole GPU when the KV
        cache is pinned (vLLM then allocates beside the weights), else the requested share. A
        KiB of slack covers the rounding of the per-stage sums."""
        one_stage = self._shape(tp, 1).stages[0][1]
        limit = self.hw.gpu_memory_bytes if self.kv_pin is not None else math.ceil(self.hw.gpu_memory_bytes * self.util)
        return (one_stage - pp - 1024) / pp >= limit

    def fit_budget(self, tp: int, pp: int, min_concurrency: float = 1) -> budget_mod.Budget:
        """The budget a layout is judged by: at the default 256 sequences when that already holds
        `min_concurrency` requests, else at the max_num_seqs the plan would settle on there (fewer
        sequences mean a smaller sampler and fewer CUDA graphs, which can make a layout fit)."""
        b = self.budget(tp, pp)
        if self.req.max_num_seqs or self.concurrency(b, self.required_len) >= min_concurrency:
            return b
        return self.budget(tp, pp, self.settle_max_num_seqs(tp, pp)[0])

    def fits(self, tp: int, pp: int, min_concurrency: float) -> bool:
        if pp > 1 and self._weights_overflow(tp, pp):
            return False
        if not self.req.max_num_seqs and self.concurrency(self.budget(tp, pp, 1), self.required_len) < min_concurrency:
            # Neither the default nor a settled max_num_seqs can fit: none leaves more KV cache
            # than 1, the smallest candidate (its sampler pass is one sequence and its capture
            # list {1, 2} is part of every larger one's, so every overhead term is at its least).
            return False
        return self.concurrency(self.fit_budget(tp, pp, min_concurrency), self.required_len) >= min_concurrency

    def require_fit(self, tp: int, pp: int, pinned: bool) -> None:
        b = self.fit_budget(tp, pp)
        if self.concurrency(b, self.required_len) >= 1:
            return
        raise DoesNotFitError(self.shortfall(b, tp, pp))

    def shortfall(self, b: budget_mod.Budget, tp: int, pp: int) -> str:
        w = max(b.stages, key=lambda s: s.weights)
        overheads = w.over.total
        per_token = max(s.layout.bytes_per_token for s in b.stages)
        what = (f"{self.model.id} ({self.p.quantization or self.p.dtype}) does not fit {self.hw.name} "
                f"with TP={tp} x PP={pp}: ")
        if not b.fits_weights and self.kv_pin is not None:
            usable = self.hw.gpu_memory_bytes - overheads
            short = self.kv_pin - w.pin_room
            what += (f"weights need {gib(w.weights)} per GPU plus the pinned {gib(self.kv_pin)} KV cache "
                     f"(--kv-cache-memory), but {gib(usable)} of each {gib(self.hw.gpu_memory_bytes)} GPU is left "
                     f"after activations and CUDA graphs (short by {gib(short)} per GPU)")
        elif not b.fits_weights and w.requested <= overheads:
            what += (f"gpu-memory-utilization {self.util:g} grants vLLM {gib(w.requested)} of each "
                     f"{gib(self.hw.gpu_memory_bytes)} GPU, less than the {gib(overheads)} of activations and CUDA "
                     "graphs alone (raise --gpu-memory-utilization)")
        elif not b.fits_weights:
            usable = w.requested - overheads
            need = w.weights + self.required_len * per_token
            short = need - usable
            what += (f"weights need {gib(w.weights)} per GPU plus {gib(self.required_len * per_token)} KV for one "
                     f"{self.required_len}-token request, but {gib(usable)} of each "
                     f"{gib(self.hw.gpu_memory_bytes)} GPU "
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
                limit = (f", above --max-nodes-per-replica {self.req.max_nodes_per_replica}"
                         if more_pp > self.max_stages() else "")
                out.append(f"more nodes: TP={tp} x PP={more_pp} over {more_pp} {self.hw.name} "
                           f"(--pipeline-parallel-size {more_pp}{limit})")
                break
        if self.p.quantization is None:
            for label, bits in (("fp8", 8.0), ("a 4-bit AWQ/GPTQ checkpoint", 4 + 20 / 128)):
                alt = budget_mod.Precisions(self.p.dtype, self.p.dtype_bytes, "x", bits, "linear",
                                            self.p.kv_cache_dtype, self.p.kv_dtype_bytes)
                s = budget_mod.Settings(tp, pp, self.util, self.batched, self.seqs0, self.block_for(tp), self.kv_pin,
                                        self.req.async_scheduling, attention_backend=self.block_rule.backend,
                                        vllm_version=self.vllm_version)
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
            if not _fits_one_machine(trial.model_dump_json(), h):
                continue
            out.append(f"bigger instance: one {h.name} (--instance {h.name})")
            break
        if self.req.max_model_len:
            out.append("shorter context: lower --max-model-len")
        return out or ["none found in the catalog: use more nodes with a larger --pipeline-parallel-size"]


    # -- model source, replicas and sections ----------------------------------------------------
    @property
    def model_source(self) -> str:
        return self.req.model_source or self.model.source

    @property
    def served_model_name(self) -> str:
        if self.req.served_model_name:
            return self.req.served_model_name
        # a local config.json names no repo: clients send what vLLM loads (--model-source) when
        # one is given, as vLLM itself names a model it serves by its path or URI
        return self.model.hf_repo or self.req.model_source or Path(self.model.source).name or "model"

    def choose_replicas(self, max_concurrency: float, tp: int, pp: int) -> tuple[int, str]:
        req = self.req
        if req.replicas is not None:
            return req.replicas, "pinned by --replicas"
        if req.target_concurrency is not None:
            return (max(1, math.ceil(req.target_concurrency / max(max_concurrency, 1e-9))),
                    f"ceil(target concurrency {req.target_concurrency} / {max_concurrency:.2f} per replica)")
        if pp > 1:
            return 1, "one model copy; raise --replicas or --target-concurrency for more groups"
        return (max(1, self.hw.gpus_per_node // tp),
                f"{self.hw.gpus_per_node} GPUs per node / {tp} per pod: a node is billed whole, so fill it")

    def layout_plan(self, tp: int, pp: int, layout_why: str, max_concurrency: float) -> LayoutPlan:
        d = Derivations()
        d.add("tensor_parallel_size / pipeline_parallel_size", f"TP={tp} x PP={pp}", layout_why, LAYOUT_RULE)
        replicas, why = self.choose_replicas(max_concurrency, tp, pp)
        d.add("replicas", str(replicas), why)
        return LayoutPlan(tensor_parallel_size=tp, pipeline_parallel_size=pp, replicas=replicas,
                          derivations=d.items)

    def engine_plan(self, max_model_len: int, max_num_seqs: int, seqs_why: str, tp: int = 1) -> EnginePlan:
        d = Derivations()
        d.add("vllm_version", self.vllm_version, self._version_why(), engine_versions.SOURCE)
        block = self.block_for(tp)
        d.add("block_size", str(block), self.block_rule.why + self._hybrid_block_why(tp, block), attention.SOURCE)
        d.add("max_num_seqs", str(max_num_seqs), seqs_why)
        d.add("max_num_batched_tokens", str(self.batched), "pinned" if self.req.max_num_batched_tokens else
              f"{DEFAULT_BATCHED_TOKENS} with chunked prefill: long prompts are split, "
              "so it need not reach max_model_len")
        settings = engine_settings(
            dtype=self.p.dtype, max_model_len=max_model_len, gpu_memory_utilization=self.util,
            kv_cache_memory_bytes=self.kv_pin, max_num_seqs=max_num_seqs, max_num_batched_tokens=self.batched,
            block_size=block, kv_cache_dtype=self.p.kv_cache_dtype,
            # a quantized checkpoint declares its method; vLLM reads it from config.json
            quantization=self.req.quantization if self.a.quantization is None else None,
            async_scheduling=self.req.async_scheduling)
        for name, value in self.req.engine_passthrough().items():
            settings[name] = value
            d.add(name, str(value), f"set by --{name.replace('_', '-')} (vLLM's default otherwise); no effect "
                  "on the sizing")
        return EnginePlan(gpu_memory_utilization=self.util, kv_cache_memory_bytes=self.kv_pin,
                          max_num_seqs=max_num_seqs, max_num_batched_tokens=self.batched,
                          enable_chunked_prefill=True, enable_prefix_caching=True, settings=settings,
                          vllm_version=self.vllm_version, derivations=d.items)

    def _version_why(self) -> str:
        if self.req.vllm_version is not None:
            return "pinned by --vllm-version (the image you run carries it)"
        if self.req.topology in ON_RAY:
            return (f"the {self.req.topology} topology's Ray images carry vLLM {engine_versions.RAY_VLLM} "
                    "(ray[llm]==2.58.0 pins vllm[audio]==0.26.0; the AWS Ray LLM DLC ships the same)")
        return f"the model server image vllm/vllm-openai:v{engine_versions.SERVER_VLLM}"

    def check_engine_settings(self, settings: list[EngineSettings], topology: str) -> None:
        """Refuse an engine setting the release sized for does not have, naming its flag."""
        flags = {name: "--" + name.replace("_", "-") for name in self.req.engine_passthrough()}
        engine_versions.check_settings(self.vllm_version, settings, topology, flags)

    def _hybrid_block_why(self, tp: int, block: int) -> str:
        st = self.a.state
        if st is None:
            return ""
        page = kvcache.bytes_per_token_per_layer(self.a, tp, self.p.kv_dtype_bytes)
        state = st.state_bytes(tp, self.p.dtype_bytes)
        verb = "raised to" if block > self.block else "kept at"
        return (f"; hybrid: {verb} {block} so that one attention page ({block} x {page:,} B = {block * page:,} B) "
                f"holds one {st.kind} layer state ({state:,} B per sequence at TP={tp}, padded to the page); vLLM "
                "raises it so even when --block-size is given (vllm/platforms/interface.py _align_hybrid_block_size)")

    def check_topology(self, pp: int) -> None:
        """Topology choices the layout cannot serve; errors name the flag."""
        req, hw = self.req, self.hw
        disaggregated = req.topology == "disaggregated"
        if req.topology in ON_RAY and pp > 1:
            # The chart runs each Ray Serve LLM engine in one worker pod (one node): no pipeline
            # stages across Ray nodes.
            raise InvalidOptionError(
                f"--topology {req.topology} needs one model copy per node, but {self.model.id} needs "
                f"{pp} {hw.name} nodes; choose a larger instance or --topology auto")
        if disaggregated and hw.efa_max == 0:
            with_efa = sorted(h.name for h in _catalog_instances() if h.efa_max > 0)
            raise InvalidOptionError(
                f"--topology disaggregated moves the KV cache over EFA, and {hw.name} has no EFA interface "
                f"(instances with EFA: {', '.join(with_efa)})")
        if (req.prefill_replicas or req.decode_replicas) and not disaggregated:
            raise InvalidOptionError("--prefill-replicas/--decode-replicas need --topology disaggregated")


# The parallelism decision tree the layout derivation cites.
LAYOUT_RULE = ("one GPU if weights plus a useful KV cache fit it, else the GPUs of one machine, else tensor "
               "parallel inside each machine and pipeline stages across machines; TP divides the heads")
# NIXL moves the KV cache from prefill to decode engines; LIBFABRIC is its EFA backend. The
# buffer device (GPU memory or a host copy) follows the instance: planning/kv_transfer.py.
KV_TRANSFER_CONFIG = {"kv_connector": "NixlConnector", "kv_role": "kv_both",
                      "kv_connector_extra_config": {"backends": ["LIBFABRIC"]}}


def kv_transfer_config(buffer_device: str) -> dict:
    """KV_TRANSFER_CONFIG with vLLM's kv_buffer_device: "cuda" or "cpu" (a host buffer)."""
    return {**KV_TRANSFER_CONFIG, "kv_buffer_device": buffer_device}


def serve_autoscaling(req: PlanRequest, layout: LayoutPlan, max_num_seqs: int) -> ServeAutoscaling:
    """Ray Serve's replica autoscaling of a ray-serve deployment."""
    target = max(1, max_num_seqs // 2)
    pinned = req.replicas is not None
    ceiling = layout.replicas if pinned else max(2, layout.replicas)
    nodes = layout.nodes_per_replica
    d = Derivations()
    d.add("serve_autoscaling", f"1..{ceiling} replicas, target {target} ongoing requests",
          f"min 1, max = {'--replicas' if pinned else f'max(2, replicas {layout.replicas})'}, "
          f"target = max_num_seqs {max_num_seqs} / 2",
          "Ray Serve scales model replicas; half the running-sequence cap leaves room for bursts")
    return ServeAutoscaling(min_replicas=1, max_replicas=ceiling, target_ongoing_requests=target,
                            min_worker_pods=nodes, max_worker_pods=ceiling * nodes, derivations=d.items)


def phases(req: PlanRequest, layout: LayoutPlan, engine: EnginePlan,
           transfer: KvTransfer) -> tuple[PhasePlan, PhasePlan]:
    """The prefill and decode phases of a disaggregated deployment; `transfer` is NIXL's buffer
    device and its costs (planning/kv_transfer.py), the same in both pools."""
    decode_n = req.decode_replicas or layout.replicas
    prefill_n = req.prefill_replicas or max(1, math.ceil(decode_n / 2))
    seqs = engine.max_num_seqs
    prefill_seqs = min(seqs, PREFILL_MAX_NUM_SEQS)
    d = Derivations()
    d.add("prefill/decode pools", f"{prefill_n} prefill + {decode_n} decode",
          f"decode = replicas {decode_n}; prefill = ceil(decode / 2); prefill max_num_seqs = "
          f"min({seqs}, {PREFILL_MAX_NUM_SEQS})",
          "prefill is compute-bound: a few long prompts fill a scheduler step, and each prefill pass is short; "
          "decode is memory-bound: it holds every running sequence's KV cache, so it gets the larger pool")

    def settings(max_num_seqs: int) -> EngineSettings:
        return {**engine.settings, "max_num_seqs": max_num_seqs,
                "kv_transfer_config": kv_transfer_config(transfer.buffer_device)}
    costs = {"kv_buffer_device": transfer.buffer_device, "host_kv_buffer_bytes": transfer.host_buffer_bytes,
             "kv_transfer_seconds": transfer.seconds}
    prefill = PhasePlan(role="prefill", replicas=prefill_n, max_num_seqs=prefill_seqs,
                        max_num_batched_tokens=engine.max_num_batched_tokens, settings=settings(prefill_seqs),
                        **costs, derivations=d.items + transfer.derivations)
    decode = PhasePlan(role="decode", replicas=decode_n, max_num_seqs=seqs,
                       max_num_batched_tokens=engine.max_num_batched_tokens, settings=settings(seqs), **costs)
    return prefill, decode


@lru_cache(maxsize=2048)
def _fits_one_machine(request_json: str, hw: Hardware) -> bool:
    """Whether the request fits one machine of its instance `hw` at TP = that machine's GPUs
    (False when the request is invalid there): the question `alternatives` asks of each bigger
    instance. Every refusal of the same model asks it again of the same instances, so the
    answers are kept, keyed by the whole request and the instance's every figure (a catalog that
    changed would not be answered from an old entry); at most 2048 of them, a few MB."""
    try:
        other = Decisions(PlanRequest.model_validate_json(request_json))
    except InvalidOptionError:
        return False
    return other.fits(other.node_tp(), 1, 1)


def _catalog_instances() -> list[Hardware]:
    return list(instance_catalog().values())

"""The planner's shortcuts change its speed, not its answers: the per-plan budget memo
(Decisions.budget), the layout shapes shared across sequence counts (budget.Shape), the early
"settling cannot help" refusal in Decisions.fits, the bounds of the max_num_seqs bisection, the
answers kept for the bigger instances a refusal suggests and the pipeline depths refused on
weights alone give the same plans, and the same refusals, as computing every budget afresh,
settling every layout, bisecting over every candidate, asking every bigger instance again and
budgeting every pipeline depth."""

from __future__ import annotations

import pytest

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog
from vllm_eks.core.errors import VllmEksError
from vllm_eks.memory import budget as budget_mod
from vllm_eks.memory import overheads
from vllm_eks.planning import decisions as decisions_mod
from vllm_eks.planning.decisions import DEFAULT_MAX_NUM_SEQS, Decisions
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

VARIANTS = ({}, {"max_model_len": 32768}, {"max_nodes_per_replica": 1}, {"kv_cache_dtype": "fp8"},
            {"gpu_memory_utilization": 0.5}, {"kv_cache_memory_gib": 4.0})
CANDIDATES = list(range(1, 8)) + list(range(8, DEFAULT_MAX_NUM_SEQS + 1, 8))


def _sample() -> list[tuple[str, str]]:
    pairs = [(m, i) for m in sorted(model_catalog()) for i in sorted(instance_catalog())]
    return pairs[::5]   # every fifth pair: each model, each instance, fits and refusals


def _outcome(req: PlanRequest) -> str:
    try:
        return make_plan(req).model_dump_json()
    except VllmEksError as e:
        return f"refused: {e}"


def _plain_budget(self: Decisions, tp: int, pp: int, seqs: int | None = None) -> budget_mod.Budget:
    s = budget_mod.Settings(tp, pp, self.util, self.batched, seqs or self.seqs0, self.block_for(tp), self.kv_pin,
                            self.req.async_scheduling, attention_backend=self.block_rule.backend,
                            vllm_version=self.vllm_version)
    return budget_mod.compute(self.a, self.hw, self.p, s)


def _plain_fits(self: Decisions, tp: int, pp: int, min_concurrency: float) -> bool:
    return self.concurrency(self.fit_budget(tp, pp, min_concurrency), self.required_len) >= min_concurrency


def _plain_settle(self: Decisions, tp: int, pp: int) -> tuple[int, str]:
    """The bisection over every candidate, without the bounds from the two ends."""
    if self.req.max_num_seqs:
        return self.choose_max_num_seqs(self.budget(tp, pp))
    lo, hi = 0, len(CANDIDATES) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if self.choose_max_num_seqs(self.budget(tp, pp, CANDIDATES[mid]))[0] >= CANDIDATES[mid]:
            lo = mid
        else:
            hi = mid - 1
    seqs = CANDIDATES[lo]
    _, why = self.choose_max_num_seqs(self.budget(tp, pp, seqs))
    return seqs, why + f" (KV tokens of the budget at max_num_seqs {seqs})"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) or "defaults")
def test_plans_are_the_same_without_the_memo_and_the_shortcut(variant, monkeypatch):
    reqs = [PlanRequest(model=m, instance=i, **variant) for m, i in _sample()]
    fast = [_outcome(r) for r in reqs]
    monkeypatch.setattr(Decisions, "budget", _plain_budget)
    monkeypatch.setattr(Decisions, "fits", _plain_fits)
    monkeypatch.setattr(Decisions, "settle_max_num_seqs", _plain_settle)
    monkeypatch.setattr(decisions_mod, "_fits_one_machine", decisions_mod._fits_one_machine.__wrapped__)
    monkeypatch.setattr(Decisions, "_weights_overflow", lambda self, tp, pp: False)
    slow = [_outcome(r) for r in reqs]
    assert [r.model + "|" + r.instance for r, f, s in zip(reqs, fast, slow) if f != s] == []
    assert any(f.startswith("refused") for f in fast) and any(not f.startswith("refused") for f in fast)


@pytest.mark.parametrize("batched", [1, 2, 7, 256, 300, 512, 1000, 8192, 16384])
@pytest.mark.parametrize("max_capture", [overheads.DEFAULT_MAX_CAPTURE, overheads.DEFAULT_MAX_CAPTURE_BLACKWELL])
def test_one_sequence_has_the_fewest_graphs_of_every_candidate(batched, max_capture):
    """The premise of the early refusal: at max_num_seqs 1 the capture list is part of every
    other candidate's, so its graph counts and its largest capture are the least."""
    one = set(overheads.capture_sizes(1, batched, max_capture))
    p1, f1 = overheads.graph_counts(1, batched, max_capture)
    for c in (c for c in CANDIDATES if c <= batched):
        sizes = overheads.capture_sizes(c, batched, max_capture)
        assert one <= set(sizes) and max(one) <= sizes[-1]
        p, f = overheads.graph_counts(c, batched, max_capture)
        assert p >= p1 and f >= f1


@pytest.mark.parametrize("batched", [256, 257, 300, 384, 500, 512, 513, 777, 1000, 1024, 1025, 8192])
@pytest.mark.parametrize("max_capture", [overheads.DEFAULT_MAX_CAPTURE, overheads.DEFAULT_MAX_CAPTURE_BLACKWELL])
def test_graphs_never_shrink_along_the_candidates(batched, max_capture):
    """The premise of the settling bounds: from one candidate max_num_seqs to the next, the
    graph counts and the largest capture do not fall (the sampler grows with it anyway)."""
    shapes = [(*overheads.graph_counts(c, batched, max_capture), overheads.capture_sizes(c, batched, max_capture)[-1])
              for c in CANDIDATES]
    for before, after in zip(shapes, shapes[1:]):
        assert all(b <= a for b, a in zip(before, after)), (before, after)


@pytest.mark.parametrize("model", sorted(model_catalog())[::3])
def test_overheads_grow_along_the_candidates_and_are_least_at_one_sequence(model):
    a = Decisions(PlanRequest(model=model, instance="p5.48xlarge")).a
    for tp, pp in ((1, 1), (8, 1), (8, 2)):
        layers = a.num_layers // pp
        seen = [overheads.estimate(a, tp, pp, layers, 8192, c, 2, nvlink=True) for c in CANDIDATES]
        for before, after in zip(seen, seen[1:]):
            assert (after.total >= before.total and after.expected >= before.expected
                    and after.optimistic >= before.optimistic)


def test_the_memo_belongs_to_one_plan():
    """Budgets are kept per Decisions object, never across requests."""
    a = Decisions(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))
    b = Decisions(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge", gpu_memory_utilization=0.5))
    assert a.budget(1, 1) is a.budget(1, 1)
    assert a.budget(1, 1).stages[0].available > b.budget(1, 1).stages[0].available


def test_a_shape_for_another_layout_is_refused():
    d = Decisions(PlanRequest(model="llama-3.1-8b-instruct", instance="p5.48xlarge"))
    s = budget_mod.Settings(2, 1, 0.9, 8192, 256, 16, None)
    with pytest.raises(ValueError, match="TP=1 x PP=1 given for settings TP=2"):
        budget_mod.compute(d.a, d.hw, d.p, s, budget_mod.shape(d.a, d.hw, d.p, 1, 1))


def test_the_bigger_instance_answers_are_keyed_by_the_instance_figures():
    """An instance of the same name with other figures (a catalog that changed) is asked afresh."""
    from dataclasses import replace

    from vllm_eks.catalog.instances import instance_catalog

    h = instance_catalog()["p5.48xlarge"]
    req = PlanRequest(model="llama-3.1-405b-instruct", instance=h.name, pipeline_parallel_size=1).model_dump_json()
    small = replace(h, gpu_memory_bytes=h.gpu_memory_bytes // 8)
    assert decisions_mod._fits_one_machine(req, h) is False
    assert decisions_mod._fits_one_machine(req, small) is False
    assert decisions_mod._fits_one_machine.cache_info().currsize >= 2
    ok = PlanRequest(model="llama-3.1-8b-instruct", instance=h.name, pipeline_parallel_size=1).model_dump_json()
    assert decisions_mod._fits_one_machine(ok, h) is True


@pytest.mark.parametrize("variant", ({}, {"kv_cache_memory_gib": 2.0}, {"gpu_memory_utilization": 0.5}),
                         ids=("defaults", "pinned-kv", "half-utilization"))
def test_a_layout_whose_weights_overflow_has_no_budget_that_fits(variant):
    """The premise of the early pipeline-stage refusal: where Decisions._weights_overflow says a
    stage's weights alone fill its GPUs, even the one-sequence budget leaves no KV cache, and the
    largest stage holds at least 1/PP of the one-stage weights."""
    from vllm_eks.catalog.instances import instance_catalog

    seen = 0
    for model in sorted(model_catalog())[::2]:
        for name in ("g4dn.xlarge", "g5.12xlarge", "g6e.xlarge", "p4d.24xlarge"):
            if name not in instance_catalog():
                continue
            try:
                d = Decisions(PlanRequest(model=model, instance=name, **variant))
            except VllmEksError:
                continue
            tp = d.node_tp()
            one = d._shape(tp, 1).stages[0][1]
            for pp in range(2, 17):
                assert max(w for _, w, _ in d._shape(tp, pp).stages) >= (one - pp) / pp
                if d._weights_overflow(tp, pp):
                    seen += 1
                    assert not d.budget(tp, pp, 1).fits_weights
    assert seen > 0

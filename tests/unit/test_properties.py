"""Invariants of the memory model over the whole catalog (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog, resolve_model
from vllm_eks.memory import budget, kvcache
from vllm_eks.planning.decisions import valid_tp

MODELS = sorted(model_catalog())
INSTANCES = sorted(instance_catalog())


def _budget(model, instance, tp, pp, util, kv_bytes=2, block=16):
    a = resolve_model(model).architecture
    hw = instance_catalog()[instance]
    p = budget.Precisions("bfloat16", 2, None, None, "linear", "auto" if kv_bytes == 2 else "fp8", kv_bytes)
    s = budget.Settings(tp, pp, util, 8192, 256, block, None)
    return a, budget.compute(a, hw, p, s)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(INSTANCES), st.integers(1, 8), st.integers(1, 4),
       st.floats(0.3, 0.99), st.floats(0.001, 0.05))
def test_more_utilization_never_fewer_tokens(model, instance, tp, pp, util, step):
    a0 = resolve_model(model).architecture
    if valid_tp(a0, tp) or pp > a0.num_layers:
        return
    _, low = _budget(model, instance, tp, pp, util)
    _, high = _budget(model, instance, tp, pp, min(1.0, util + step))
    assert high.kv_capacity(4096).tokens >= low.kv_capacity(4096).tokens


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 4, 8, 16]),
       st.sampled_from([1, 2]))
def test_higher_tp_never_more_kv_bytes_per_gpu(model, tp_a, tp_b, kv_bytes):
    a = resolve_model(model).architecture
    lo, hi = sorted((tp_a, tp_b))
    if valid_tp(a, lo) or valid_tp(a, hi):
        return
    layers = range(a.num_layers)
    assert kvcache.layout(a, hi, layers, kv_bytes).bytes_per_token <= kvcache.layout(a, lo, layers, kv_bytes).bytes_per_token


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from([1, 2, 4, 8]))
def test_fp8_kv_halves_bytes_per_token(model, tp):
    a = resolve_model(model).architecture
    if valid_tp(a, tp):
        return
    layers = range(a.num_layers)
    fp8, bf16 = kvcache.layout(a, tp, layers, 1).bytes_per_token, kvcache.layout(a, tp, layers, 2).bytes_per_token
    if a.mla is not None and a.mla.sparse:
        # DeepSeek-V3.2: the fp8_ds_mla row (656 B: fp8 latent, float32 scales, bf16 rope) is not
        # half the bf16 latent (1152 B), and the indexer keys (132 B) are fp8 either way
        assert (fp8, bf16) == ((656 + 132) * a.num_layers, (1152 + 132) * a.num_layers)
        return
    assert fp8 * 2 == bf16


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(INSTANCES), st.integers(1, 8), st.integers(1, 3),
       st.floats(0.05, 1.0), st.sampled_from([16, 32, 128]), st.integers(1, 262144))
def test_budgets_never_negative(model, instance, tp, pp, util, block, max_len):
    a0 = resolve_model(model).architecture
    if valid_tp(a0, tp) or pp > a0.num_layers:
        return
    a, b = _budget(model, instance, tp, pp, util, block=block)
    cap = b.kv_capacity(max_len)
    assert cap.num_blocks >= 0 and cap.tokens >= 0 and cap.max_concurrency >= 0
    for stage in b.stages:
        assert stage.weights > 0 and stage.over.activation_peak > 0
        assert stage.layout.bytes_per_token > 0

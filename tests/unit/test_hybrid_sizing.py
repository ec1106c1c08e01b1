"""Hybrid models sized as vLLM 0.32 sizes them (generator/vllm_eks/model/hybrid.py): Qwen3-Next (Gated
DeltaNet + gated attention) and Granite 4.0-H (Mamba2 + attention). Every expected figure is
worked out here by hand from the config and vLLM's formulas, not taken from the code under test:
- state of one layer and sequence (MambaSpec.real_page_size_bytes): conv channels / TP x
  (conv kernel - 1) x dtype + state heads / TP x head dims x dtype;
- block size (_align_hybrid_block_size): 16 x ceil(state / (16 x attention bytes per token));
- pool: groups of the smallest layer count, one block = group size x block x attention bytes
  per token; a request holds ceil(len / block) attention blocks plus 2 (Gated DeltaNet) or 3
  (Mamba2) blocks per state group (mamba_cache_mode "align" with prefix caching)."""

from __future__ import annotations

import json
import math

import pytest

from vllm_eks.catalog.models import model_catalog, resolve_model
from vllm_eks.core.errors import ModelConfigError, UnsupportedArchitectureError
from vllm_eks.model.architecture import parse_config
from vllm_eks.model.weights import total_parameters
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

QWEN = "qwen3-next-80b-a3b-instruct"
GRANITE = "granite-4.0-h-tiny"
GIB = 1024**3


def _summary(**kw) -> dict:
    return make_plan(PlanRequest(**kw)).json_summary()


def _derivation(s: dict, key: str) -> dict:
    (d,) = [d for d in s["derivations"] if d["key"] == key]
    return d


def test_qwen3_next_parameters_by_hand():
    h, v, experts, inter = 2048, 151936, 512, 512
    key_dim, value_dim = 16 * 128, 32 * 128
    gdn = (h * (2 * key_dim + 2 * value_dim) + h * 2 * 32 + (2 * key_dim + value_dim) * 4 + 2 * 32 + 128
           + value_dim * h)
    attention = h * 16 * 256 * 2 + 2 * h * 2 * 256 + 16 * 256 * h   # q_proj carries the output gate
    moe = experts * 3 * h * inter + 3 * h * 512 + h * experts      # routed, shared expert, router
    total = 2 * v * h + 36 * gdn + 12 * attention + 48 * (moe + 2 * h) + h
    assert total_parameters(resolve_model(QWEN).architecture) == total
    assert abs(total - 80e9) / 80e9 < 0.025                          # model card: 80B


def test_granite_4_h_tiny_parameters_by_hand():
    h, inner, groups, state, heads = 1536, 3072, 1, 128, 48
    conv = inner + 2 * groups * state
    mamba = h * (inner + conv + heads) + conv * 4 + conv + 3 * heads + inner + inner * h
    attention = 2 * h * 12 * 128 + 2 * h * 4 * 128
    moe = 64 * 3 * h * 512 + 3 * h * 1024 + h * 64
    total = 100352 * h + 36 * mamba + 4 * attention + 40 * (moe + 2 * h) + h   # tied embeddings
    assert total_parameters(resolve_model(GRANITE).architecture) == total
    assert abs(total - 7e9) / 7e9 < 0.025                            # IBM: 7B total


@pytest.mark.parametrize("tp,state,block", [
    # conv 8192 channels x 3 inputs x 2 B + 32 value heads x 128 x 128 x 2 B, split over TP; the
    # attention page per token is 2 x KV heads on the rank (2 KV heads, at least 1) x 256 x 2 B
    (1, 8192 * 3 * 2 + 32 * 128 * 128 * 2, 16 * math.ceil((8192 * 6 + 32 * 128 * 128 * 2) / (16 * 2048))),
    (2, 4096 * 3 * 2 + 16 * 128 * 128 * 2, 16 * math.ceil((4096 * 6 + 16 * 128 * 128 * 2) / (16 * 1024))),
    (4, 2048 * 3 * 2 + 8 * 128 * 128 * 2, 16 * math.ceil((2048 * 6 + 8 * 128 * 128 * 2) / (16 * 1024))),
    (8, 1024 * 3 * 2 + 4 * 128 * 128 * 2, 16 * math.ceil((1024 * 6 + 4 * 128 * 128 * 2) / (16 * 1024))),
])
def test_qwen3_next_state_and_block_size_per_tp(tp, state, block):
    a = resolve_model(QWEN).architecture
    assert a.state.state_bytes(tp, 2) == state
    assert (tp, block) in ((1, 544), (2, 544), (4, 272), (8, 144))   # the figures vLLM logs
    s = _summary(model=QWEN, instance="p5.48xlarge", tensor_parallel_size=tp, kv_cache_memory_gib=40,
                 max_model_len=32768)
    assert s["block_size"] == block
    assert s["engine_args"][s["engine_args"].index("--block-size") + 1] == str(block)


def test_qwen3_next_capacity_on_p5_by_hand():
    # TP=8 on p5.48xlarge, KV pinned at 40 GiB per GPU, the model's whole 262,144-token context
    s = _summary(model=QWEN, instance="p5.48xlarge", tensor_parallel_size=8, kv_cache_memory_gib=40,
                 max_model_len=262144)
    per_token_layer = 2 * 1 * 256 * 2                    # 1 KV head per rank (2 heads, TP 8)
    block = 144
    groups = 4                                           # 12 attention layers, 36 state layers: 1 + 3 groups of 12
    blocks = 40 * GIB // (12 * block * per_token_layer)
    per_request = math.ceil(262144 / block) + 3 * 2
    assert s["kv_bytes_per_token_per_gpu"] == 12 * per_token_layer   # attention layers only
    assert s["kv_cache_blocks"] == blocks
    assert s["max_concurrency"] == round(blocks / per_request, 2)
    assert s["kv_cache_tokens"] == int(blocks / per_request * 262144)
    assert _derivation(s, "kv_cache_groups")["value"] == f"{groups} groups of 12 layers"
    state = _derivation(s, "state_bytes_per_sequence_per_gpu")
    assert state["value"] == f"{36 * (1024 * 6 + 4 * 128 * 128 * 2):,} B"
    assert "MambaSpec" in state["source"] and "align" in state["source"]


def test_granite_4_h_tiny_capacity_on_g6e_by_hand():
    s = _summary(model=GRANITE, instance="g6e.xlarge", kv_cache_memory_gib=20, max_model_len=131072)
    per_token_layer = 2 * 4 * 128 * 2
    state = (3072 + 2 * 128) * 3 * 2 + 48 * 64 * 128 * 2
    block = 16 * math.ceil(state / (16 * per_token_layer))
    assert block == 400
    blocks = 20 * GIB // (4 * block * per_token_layer)   # groups of 4: 4 attention, 36 Mamba2 layers
    per_request = math.ceil(131072 / block) + 9 * 3       # 9 state groups, 3 blocks each (Mamba2 checkpoint)
    assert s["tensor_parallel_size"] == 1 and s["block_size"] == block
    assert s["kv_bytes_per_token_per_gpu"] == 4 * per_token_layer
    assert s["kv_cache_blocks"] == blocks
    assert s["kv_cache_tokens"] == int(blocks / per_request * 131072)
    assert _derivation(s, "kv_cache_groups")["value"] == "10 groups of 4 layers"


def test_a_pinned_block_size_is_raised_as_vllm_raises_it():
    s = _summary(model=QWEN, instance="g6e.12xlarge", tensor_parallel_size=4, block_size=16,
                 kv_cache_memory_gib=20, max_model_len=16384)
    assert s["block_size"] == 272
    why = _derivation(s, "block_size")["formula"]
    assert "raised to 272" in why and "_align_hybrid_block_size" in why
    # a block already large enough is kept
    assert _summary(model=QWEN, instance="g6e.12xlarge", tensor_parallel_size=4, block_size=512,
                    kv_cache_memory_gib=20, max_model_len=16384)["block_size"] == 512


def test_explain_says_how_the_hybrid_was_sized(cli):
    r = cli("explain", "--model", GRANITE, "--instance", "g6e.xlarge")
    assert r.exit_code == 0, r.stderr
    for text in ("state_bytes_per_sequence_per_gpu", "36 mamba2 layers", "kv_cache_groups = 10 groups of 4 layers",
                 "state (3 blocks per request)", "raised to 400"):
        assert text in r.stdout, text


def test_tp_must_split_the_state_heads():
    with pytest.raises(Exception, match="--tensor-parallel-size 3"):
        _summary(model=QWEN, instance="p5.48xlarge", tensor_parallel_size=3)


def _granite(**over) -> dict:
    return {**model_catalog()[GRANITE].config, **over}


@pytest.mark.parametrize("cfg,exc,field", [
    ({**model_catalog()[QWEN].config, "mlp_only_layers": [0, 1]}, UnsupportedArchitectureError, "mlp_only_layers"),
    ({**model_catalog()[QWEN].config, "decoder_sparse_step": 2}, UnsupportedArchitectureError, "decoder_sparse_step"),
    ({**model_catalog()[QWEN].config, "linear_num_value_heads": "32"}, ModelConfigError, "linear_num_value_heads"),
    ({**model_catalog()[QWEN].config, "linear_num_value_heads": 24}, ModelConfigError, "linear_num_value_heads"),
    ({**model_catalog()[QWEN].config, "full_attention_interval": 0}, ModelConfigError, "full_attention_interval"),
    ({**model_catalog()[QWEN].config, "attn_output_gate": "true"}, ModelConfigError, "attn_output_gate"),
    (_granite(layer_types=["mamba"] * 40), UnsupportedArchitectureError, "layer_types"),
    (_granite(layer_types=["mamba"] * 39), ModelConfigError, "layer_types"),
    (_granite(mamba_d_head=60), ModelConfigError, "mamba_d_head"),
    (_granite(mamba_conv_bias="yes"), ModelConfigError, "mamba_conv_bias"),
    (_granite(mamba_d_state=-1), ModelConfigError, "mamba_d_state"),
])
def test_hybrid_fields_are_checked_by_name(cfg, exc, field):
    with pytest.raises(exc) as e:
        parse_config(json.loads(json.dumps(cfg)), "cfg")
    assert f"'{field}'" in str(e.value) or f"{field} (" in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_an_attention_only_granite_is_a_plain_transformer():
    # Granite 4.0 Micro's layout: a granitemoehybrid config whose layers are all attention;
    # vLLM's ModelConfig.is_hybrid is False for it
    a = parse_config(_granite(layer_types=["attention"] * 40), "micro")
    assert a.state is None


def test_an_fp8_kv_cache_does_not_shrink_the_state():
    # --kv-cache-dtype fp8 halves the attention page; the state stays in the model dtype
    # (--mamba-cache-dtype "auto"), so the block doubles to hold it
    state = (3072 + 2 * 128) * 3 * 2 + 48 * 64 * 128 * 2
    s = _summary(model=GRANITE, instance="g6e.xlarge", kv_cache_dtype="fp8", kv_cache_memory_gib=20,
                 max_model_len=131072)
    assert s["block_size"] == 16 * math.ceil(state / (16 * 2 * 4 * 128 * 1)) == 800

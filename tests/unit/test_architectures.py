"""Architectures beyond the plain transformer: what is refused by name (state-space and
linear-attention hybrids other than Qwen3-Next and Granite 4.0-H, which test_hybrid_sizing
covers; DeepSeek-V3.2's indexer) and what is sized as vLLM 0.32 does (Llama 4's
interleaved MoE, shared expert and chunked local attention)."""

from __future__ import annotations

import json
import math

import pytest

from vllm_eks.catalog.models import model_catalog, resolve_model
from vllm_eks.core.errors import ModelConfigError, UnsupportedArchitectureError
from vllm_eks.memory import kvcache
from vllm_eks.model.architecture import parse_config
from vllm_eks.model.weights import bytes_per_gpu, precision_for, stage_bytes, total_parameters

# Minimal configs with the fields the real config.json files of each family carry (field names
# as in the Hugging Face files; sizes cut down).
QWEN3_NEXT = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
              "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
              "intermediate_size": 5120, "vocab_size": 151936, "full_attention_interval": 4,
              "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
              "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "num_experts": 512,
              "num_experts_per_tok": 10, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512}
JAMBA = {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
         "intermediate_size": 14336, "vocab_size": 65536, "attn_layer_period": 8, "attn_layer_offset": 4,
         "expert_layer_period": 2, "expert_layer_offset": 1, "num_experts": 16, "num_experts_per_tok": 2,
         "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256}
NEMOTRON_H = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "hidden_size": 4096,
              "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 8,
              "intermediate_size": 21504, "vocab_size": 131072,
              "hybrid_override_pattern": "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-",
              "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128, "conv_kernel": 4}
GRANITE_4_H = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
               "hidden_size": 4096, "num_hidden_layers": 4, "num_attention_heads": 32, "num_key_value_heads": 8,
               "intermediate_size": 512, "vocab_size": 100352,
               "layer_types": ["mamba", "mamba", "mamba", "attention"], "mamba_d_state": 128, "mamba_n_heads": 128}
MAMBA2 = {"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "hidden_size": 4096,
          "num_hidden_layers": 64, "vocab_size": 32768, "state_size": 128, "conv_kernel": 4, "num_heads": 128,
          "head_dim": 64, "n_groups": 8, "expand": 2}
# Qwen3.5 MoE: the same Gated DeltaNet fields as Qwen3-Next, a family this sizing does not cover
QWEN3_5_MOE = {**QWEN3_NEXT, "architectures": ["Qwen3_5MoeForCausalLM"], "model_type": "qwen3_5_moe_text"}
DEEPSEEK_V32 = {**model_catalog()["deepseek-v3"].config, "architectures": ["DeepseekV32ForCausalLM"],
                "model_type": "deepseek_v32", "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 64}


def _strip(cfg: dict, *keys: str) -> dict:
    return {k: v for k, v in cfg.items() if k not in keys}


@pytest.mark.parametrize("cfg,field", [
    (QWEN3_5_MOE, "full_attention_interval"),
    (_strip(QWEN3_5_MOE, "full_attention_interval"), "linear_num_key_heads"),
    (JAMBA, "attn_layer_period"),
    (_strip(JAMBA, "attn_layer_period", "attn_layer_offset"), "mamba_d_conv"),
    (NEMOTRON_H, "hybrid_override_pattern"),
    ({**GRANITE_4_H, "architectures": ["GraniteMoeHybridForSequenceClassification"]}, "layer_types"),
    (MAMBA2, "state_size"),
    # only the class or type name left: still refused, by that field
    ({"architectures": ["Qwen3NextForCausalLM"], "hidden_size": 64}, "architectures"),
    ({"model_type": "mamba", "hidden_size": 64}, "model_type"),
    ({"model_type": "llama", "layer_types": ["linear_attention", "full_attention"]}, "layer_types"),
    # the V3.2 indexer without MLA: vLLM builds it only beside MLA
    (_strip(DEEPSEEK_V32, "kv_lora_rank"), "index_topk"),
    ({**model_catalog()["deepseek-v3"].config, "architectures": ["DeepseekV4ForCausalLM"]}, "architectures"),
])
def test_unmodelled_architectures_are_refused_by_field(cfg, field):
    with pytest.raises(UnsupportedArchitectureError) as e:
        parse_config(cfg, "cfg")
    msg = str(e.value)
    assert "\n" not in msg and f"field '{field}'" in msg, msg
    assert "vLLM 0.32" in msg and "supported:" in msg, msg


def test_state_space_refusal_says_what_vllm_does():
    msg = str(pytest.raises(UnsupportedArchitectureError, parse_config, MAMBA2, "m").value)
    assert "MambaSpec" in msg and "num_attention_heads" not in msg
    msg = str(pytest.raises(UnsupportedArchitectureError, parse_config, QWEN3_5_MOE, "q").value)
    assert "linear-attention" in msg and "Qwen3-Next (qwen3_next)" in msg


def test_deepseek_v32_indexer_is_read_beside_mla():
    mla = parse_config(DEEPSEEK_V32, "d").mla
    assert mla.sparse and (mla.index_head_dim, mla.index_n_heads) == (128, 64)
    # vLLM builds the indexer when the config has index_topk (deepseek_v2.py is_v32)
    assert not parse_config(_strip(DEEPSEEK_V32, "index_topk"), "d").mla.sparse
    with pytest.raises(ModelConfigError, match="'index_head_dim'"):
        parse_config(_strip(DEEPSEEK_V32, "index_head_dim"), "d")


def test_chunked_layer_types_outside_llama4_are_refused():
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
           "layer_types": ["chunked_attention", "full_attention"]}
    with pytest.raises(UnsupportedArchitectureError, match="field 'layer_types'.*Llama 4"):
        parse_config(cfg, "cfg")


@pytest.mark.parametrize("cfg,field", [
    (NEMOTRON_H, "hybrid_override_pattern"), (MAMBA2, "state_size"),
    (QWEN3_5_MOE, "full_attention_interval"), (JAMBA, "attn_layer_period"),
    (_strip(DEEPSEEK_V32, "kv_lora_rank"), "index_topk"),
])
def test_cli_refuses_in_one_line(cli, tmp_path, cfg, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    for args in (["plan", "--model", str(path), "--model-source", "acme/x", "--instance", "p5.48xlarge"],
                 ["explain", "--model", str(path), "--model-source", "acme/x", "--instance", "p5.48xlarge"]):
        r = cli(*args)
        assert r.exit_code == 1, (args, r.stdout, r.stderr)
        err = r.stderr.rstrip("\n")
        assert "\n" not in err and "Traceback" not in r.stderr + r.stdout, err
        assert err.startswith("vllm-eks: error: ") and f"field '{field}'" in err, err


# --- Llama 4 ---------------------------------------------------------------------------------

SCOUT = "llama-4-scout-17b-16e-instruct"
MAVERICK = "llama-4-maverick-17b-128e-instruct"


@pytest.mark.parametrize("mid,published", [(SCOUT, 109e9), (MAVERICK, 400e9)])
def test_llama4_parameter_counts_match_the_model_cards(mid, published):
    a = resolve_model(mid).architecture
    assert abs(total_parameters(a) - published) / published < 0.025
    assert total_parameters(a) == model_catalog()[mid].num_parameters


def test_llama4_moe_layout_follows_interleave_moe_layer_step():
    scout, maverick = (resolve_model(m).architecture for m in (SCOUT, MAVERICK))
    assert all(scout.moe.is_moe_layer(i) for i in range(48))
    assert [maverick.moe.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    h, inter = 5120, 8192
    attention = 2 * h * 40 * 128 + 2 * h * 8 * 128
    expert = 3 * h * inter
    emb = 202048 * h
    # Scout: 16 routed + 1 shared expert in every layer
    text = 2 * emb + 48 * (attention + 17 * expert + h * 16 + 2 * h) + h
    assert total_parameters(scout) == text + scout.vision_params
    # Maverick: 128 routed + 1 shared in odd layers, a 16384-wide dense MLP in even layers
    moe_layer = attention + 129 * expert + h * 128 + 2 * h
    dense_layer = attention + 3 * h * 16384 + 2 * h
    assert total_parameters(maverick) == 2 * emb + 24 * (moe_layer + dense_layer) + h + maverick.vision_params


def test_llama4_stage_bytes_count_each_layer_shape():
    a = resolve_model(MAVERICK).architecture
    p = precision_for(a, 2, None, "linear")
    # two stages of 24 layers each hold 12 MoE and 12 dense layers: same layer bytes
    s0, s1 = (stage_bytes(a, p, 8, 2, s) for s in range(2))
    emb = 202048 * 5120 * 2 / 8
    assert abs((s0 - emb - a.vision_params * 2) - (s1 - emb - 5120 * 2)) <= 2
    # the vision tower is counted whole on the first stage's every rank (as for Gemma 3)
    split = (total_parameters(a) - a.vision_params) * 2 / 8 + a.vision_params * 2
    assert bytes_per_gpu(a, p, 8, 1) == pytest.approx(split, rel=0.001)


def test_llama4_chunked_local_attention_layers():
    a = resolve_model(SCOUT).architecture
    # no_rope_layers absent: transformers makes every 4th layer global (no_rope_layer_interval 4)
    assert [c for c in a.layer_chunks[:8]] == [8192, 8192, 8192, None] * 2
    assert a.has_chunked_attention and not a.has_sliding_window
    explicit = {**model_catalog()[SCOUT].config}
    explicit["text_config"] = {**explicit["text_config"], "no_rope_layers": [0, 1] * 24}
    b = parse_config(explicit, "x")
    assert b.layer_chunks[:4] == (None, 8192, None, 8192)
    off = {**explicit, "text_config": {**explicit["text_config"], "attention_chunk_size": None}}
    assert not parse_config(off, "x").has_chunked_attention


def test_llama4_kv_groups_and_capacity_as_vllm_computes_them():
    """vLLM 0.32 with the hybrid allocator: 12 global and 36 chunked layers make 4 groups of 12
    (kv_cache_utils._get_kv_cache_groups_uniform_page_size); a request of L tokens needs
    cdiv(L, 16) blocks in the full group and cdiv(min(8192 + in-flight, L), 16) in each chunked
    group (ChunkedLocalAttentionSpec.max_admission_blocks_per_request)."""
    a = resolve_model(SCOUT).architecture
    lay = kvcache.layout(a, 8, range(48), 2)
    assert lay.group_size == 12
    assert lay.groups == ((12, None),) + ((12, kvcache.Chunk(8192)),) * 3
    assert lay.bytes_per_token_per_layer == 2 * 1 * 128 * 2  # one KV head per rank at TP 8
    available = 40 * 2**30
    in_flight = kvcache.in_flight_tokens(8192, 1)
    cap = kvcache.kv_capacity(lay, available, 16, 131072, in_flight)
    num_blocks = available // (512 * 16 * 12)
    per_request = math.ceil(131072 / 16) + 3 * math.ceil((8192 + 16384) / 16)
    assert (cap.num_blocks, cap.blocks_per_request) == (num_blocks, per_request)
    assert cap.tokens == int(num_blocks / per_request * 131072)
    # a context shorter than chunk + in-flight: every group needs the whole request
    short = kvcache.kv_capacity(lay, available, 16, 8000, in_flight)
    assert short.blocks_per_request == 4 * math.ceil(8000 / 16)


def test_llama4_plans_on_p5(plan_json):
    p = plan_json("--model", SCOUT, "--instance", "p5.48xlarge", "--max-model-len", "131072")
    groups = next(d for d in p["derivations"] if d["key"] == "kv_cache_groups")
    assert groups["formula"] == "12 full, 12 chunk 8192, 12 chunk 8192, 12 chunk 8192", groups
    assert "chunked local attention" in groups["source"]


@pytest.mark.parametrize("field,value", [
    ("attention_chunk_size", 0), ("attention_chunk_size", "8192"), ("no_rope_layers", [1, 2] * 24),
    ("no_rope_layers", [1, 0]), ("no_rope_layers", "1110"), ("interleave_moe_layer_step", 0),
    ("interleave_moe_layer_step", 49), ("intermediate_size_mlp", "16384"), ("no_rope_layer_interval", 0),
])
def test_llama4_fields_are_checked(field, value):
    cfg = {**model_catalog()[MAVERICK].config}
    cfg["text_config"] = {**cfg["text_config"], field: value}
    with pytest.raises(ModelConfigError, match=field) as e:
        parse_config(cfg, "x")
    assert "\n" not in str(e.value)


def test_gemma3_without_a_pattern_gets_transformers_default():
    cfg = {**model_catalog()["gemma-3-27b-it"].config}
    cfg["text_config"] = {k: v for k, v in cfg["text_config"].items() if k != "sliding_window_pattern"}
    assert parse_config(cfg, "x").layer_windows == resolve_model("gemma-3-27b-it").architecture.layer_windows


def test_an_mla_rank_of_zero_is_refused_not_read_as_no_mla():
    cfg = {**model_catalog()["deepseek-v3"].config, "kv_lora_rank": 0}
    with pytest.raises(ModelConfigError, match="'kv_lora_rank' must be a positive integer"):
        parse_config(cfg, "x")
    assert parse_config({**cfg, "kv_lora_rank": None}, "x").mla is None

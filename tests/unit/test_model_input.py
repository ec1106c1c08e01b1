"""What config.json says about the stored weights and the context length, read as vLLM 0.32
reads it: compressed-tensors bits per weight, rope scaling's max_model_len, vision towers, and
bounds on every config integer and on --gpus-per-node."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.unit.cli_result import one_line_error
from vllm_eks.catalog.models import resolve_model
from vllm_eks.core.errors import ModelConfigError, UnsupportedArchitectureError
from vllm_eks.model.architecture import parse_config
from vllm_eks.model.weights import total_parameters
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

CT = Path(__file__).parent / "data" / "compressed-tensors"
H100 = "p5.48xlarge"
SMALL = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
         "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 32768,
         "torch_dtype": "bfloat16"}


def _write(tmp_path: Path, cfg: dict, name: str = "config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return str(path)


def _plan(path: str, **kw):
    return make_plan(PlanRequest(model=path, model_source="acme/model", instance=kw.pop("instance", H100), **kw))


# -- 1. compressed-tensors ---------------------------------------------------------------------

def _llama70b_bytes(linear_bits: float, attention_bits: float | None = None) -> int:
    """Weight bytes of the Llama-3.1-70B shape, counted from the parameter count by hand: the
    linear layers at their stored bits, embeddings, LM head and norms in bfloat16."""
    h, inter, layers, heads, kv, hd, vocab = 8192, 28672, 80, 64, 8, 128, 128256
    attention = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    mlp = 3 * h * inter
    dense = 2 * vocab * h + layers * 2 * h + h
    att_bits = linear_bits if attention_bits is None else attention_bits
    return int(layers * (attention * att_bits / 8 + mlp * linear_bits / 8) + dense * 2)


@pytest.mark.parametrize("scheme,bits", [
    ("w4a16", 4 + 16 / 128),   # int4 packed, one bf16 scale per group of 128
    ("w8a16", 8),              # int8 packed four to an int32, per-channel scales
    ("w8a8-int", 8),           # int8, per-channel scales
    ("w8a8-fp8", 8),           # fp8 e4m3, per-channel scales
])
def test_compressed_tensors_weight_bytes(scheme, bits):
    plan = _plan(str(CT / scheme / "config.json"))
    assert plan.memory.weights_bytes_total == _llama70b_bytes(bits)


def test_eight_bit_compressed_tensors_is_not_sized_as_four_bit():
    w4 = _plan(str(CT / "w4a16" / "config.json")).memory.weights_bytes_total
    w8 = _plan(str(CT / "w8a16" / "config.json")).memory.weights_bytes_total
    assert w8 / 2**30 > 65 and w4 / 2**30 < 38


def test_compressed_tensors_ignore_keeps_attention_in_16_bits(tmp_path):
    cfg = json.loads((CT / "w8a8-int" / "config.json").read_text())
    cfg["quantization_config"]["ignore"] = ["lm_head", "re:.*self_attn.*"]
    plan = _plan(_write(tmp_path, cfg))
    assert plan.memory.weights_bytes_total == _llama70b_bytes(8, attention_bits=16)


def test_compressed_tensors_targets_only_the_mlp(tmp_path):
    cfg = json.loads((CT / "w4a16" / "config.json").read_text())
    cfg["quantization_config"]["config_groups"]["group_0"]["targets"] = ["re:.*mlp.*_proj$"]
    plan = _plan(_write(tmp_path, cfg))
    assert plan.memory.weights_bytes_total == _llama70b_bytes(4 + 16 / 128, attention_bits=16)


def test_compressed_tensors_asymmetric_groups_store_zero_points(tmp_path):
    cfg = json.loads((CT / "w4a16" / "config.json").read_text())
    cfg["quantization_config"]["config_groups"]["group_0"]["weights"]["symmetric"] = False
    a = parse_config(cfg, "asym")
    assert a.quantization.bits == 4 + (16 + 4) / 128


@pytest.mark.parametrize("mutate,key", [
    (lambda q: q.pop("config_groups"), "config_groups"),
    (lambda q: q["config_groups"]["group_0"]["weights"].update(num_bits=5), "config_groups.group_0.weights.num_bits"),
    (lambda q: q["config_groups"]["group_0"]["weights"].update(num_bits="8"), "config_groups.group_0.weights.num_bits"),
    (lambda q: q["config_groups"]["group_0"]["weights"].update(type="posit"), "config_groups.group_0.weights.type"),
    (lambda q: q["config_groups"]["group_0"]["weights"].update(strategy="group", group_size=0),
     "config_groups.group_0.weights.group_size"),
    (lambda q: q["config_groups"]["group_0"].update(format="marlin-24"), "config_groups.group_0.format"),
    (lambda q: q.update(ignore="lm_head"), "ignore"),
    (lambda q: q.update(ignore=["re:.*q_proj$"]), "ignore"),
    (lambda q: q["config_groups"]["group_0"].update(targets=["re:vision_tower.*"]), "config_groups"),
])
def test_bad_compressed_tensors_blocks_name_the_key(cli, tmp_path, mutate, key):
    cfg = json.loads((CT / "w8a16" / "config.json").read_text())
    mutate(cfg["quantization_config"])
    r = cli("plan", "--model", _write(tmp_path, cfg), "--model-source", "acme/m", "--instance", H100)
    one_line_error(r, f"'{key}'")


def test_compressed_tensors_int_conflicts_with_gptq_flag(cli):
    r = cli("plan", "--model", str(CT / "w4a16" / "config.json"), "--model-source", "acme/m", "--instance", H100,
            "--quantization", "gptq")
    one_line_error(r, "--quantization gptq", "compressed-tensors")


# -- 2. rope scaling ---------------------------------------------------------------------------
# vLLM 0.32 vllm/config/model.py _get_and_verify_max_len: the factor of the scaling types other
# than su/longrope/llama3/yarn/deepseek_yarn/deepseek_llama_scaling multiplies
# max_position_embeddings; checked against the engine (ModelConfig(...).max_model_len gives
# 131072 for linear x4 and 32768 for yarn x4 over max_position_embeddings 32768).

@pytest.mark.parametrize("rope,expected", [
    ({"rope_type": "linear", "factor": 4}, 131072),
    ({"type": "linear", "factor": 4.0}, 131072),                       # the legacy key
    ({"type": "dynamic", "factor": 2.5}, 81920),
    ({"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 32768}, 32768),
    ({"rope_type": "llama3", "factor": 8, "original_max_position_embeddings": 8192, "low_freq_factor": 1,
      "high_freq_factor": 4}, 32768),
    ({"type": "mrope", "mrope_section": [16, 24, 24]}, 32768),
    ({"rope_type": "default"}, 32768),
])
def test_max_len_follows_vllm_derivation(rope, expected):
    assert parse_config({**SMALL, "rope_scaling": rope}, "t").max_len == expected


def test_rope_parameters_nested_per_layer_type():
    cfg = {**SMALL, "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2},
                                        "sliding_attention": {"rope_type": "default"}}}
    assert parse_config(cfg, "t").max_len == 65536


def test_planner_serves_the_scaled_length(tmp_path, cli):
    path = _write(tmp_path, {**SMALL, "rope_scaling": {"rope_type": "linear", "factor": 4}})
    plan = _plan(path, instance="g6e.xlarge", max_model_len=131072)
    assert plan.memory.max_model_len == 131072
    r = cli("plan", "--model", path, "--model-source", "acme/m", "--instance", "g6e.xlarge",
            "--max-model-len", "131073")
    one_line_error(r, "--max-model-len 131073", "131072", "rope_scaling.factor 4")


def test_planner_refuses_beyond_yarn_max_position_embeddings(tmp_path, cli):
    path = _write(tmp_path, {**SMALL, "rope_scaling": {"rope_type": "yarn", "factor": 4,
                                                        "original_max_position_embeddings": 32768}})
    r = cli("plan", "--model", path, "--model-source", "acme/m", "--instance", "g6e.xlarge",
            "--max-model-len", "131072")
    one_line_error(r, "--max-model-len 131072", "32768")


@pytest.mark.parametrize("rope,key", [
    ({"rope_type": "linear", "factor": 0}, "rope_scaling.factor"),
    ({"rope_type": "linear", "factor": -2}, "rope_scaling.factor"),
    ({"rope_type": "linear", "factor": "4"}, "rope_scaling.factor"),
    ({"rope_type": "yarn", "factor": True, "original_max_position_embeddings": 4096}, "rope_scaling.factor"),
    ({"rope_type": "linear"}, "rope_scaling.factor"),
    ({"rope_type": "linear", "factor": 1e300}, "rope_scaling.factor"),
    ({"rope_type": "magic", "factor": 2}, "rope_scaling.rope_type"),
    ({"type": "magic"}, "rope_scaling.type"),
    ({"rope_type": 3}, "rope_scaling.rope_type"),
    ({"rope_type": "linear", "type": "yarn", "factor": 2}, "rope_scaling.type"),
    ({"type": "mrope"}, "rope_scaling.type"),
    ({"rope_type": "yarn", "factor": 2, "original_max_position_embeddings": "4k"},
     "rope_scaling.original_max_position_embeddings"),
    ("yarn", "rope_scaling"),
])
def test_malformed_rope_scaling_names_the_key(cli, tmp_path, rope, key):
    r = cli("plan", "--model", _write(tmp_path, {**SMALL, "rope_scaling": rope}), "--model-source", "acme/m",
            "--instance", "g6e.xlarge")
    one_line_error(r, f"'{key}'")


def test_catalog_max_lengths_unchanged():
    assert resolve_model("llama-3.1-8b-instruct").architecture.max_len == 131072
    assert resolve_model("deepseek-v3").architecture.max_len == 163840


# -- 3. vision towers --------------------------------------------------------------------------

def test_gemma3_vision_tower_is_counted():
    a = resolve_model("gemma-3-27b-it").architecture
    # the catalog's published breakdown: SigLIP 416,866,032 + projector 6,194,304; the ViT blocks
    # are counted, biases, norms, embeddings and the projector (under 3%) are not
    assert a.vision_params == 27 * (4 * 1152**2 + 2 * 1152 * 4304)
    assert 0.97 < a.vision_params / (416_866_032 + 6_194_304) < 1


def test_qwen2_vl_vision_tower_from_embed_dim():
    # Qwen2-VL-7B-Instruct's vision_config (transformers Qwen2VLVisionConfig keys)
    v = {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "in_chans": 3, "hidden_size": 3584,
         "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    cfg = {**SMALL, "architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
           "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4, "vision_config": v}
    e, inter, merged = 1280, 5120, 1280 * 4
    block = 4 * e + (3 * e * e + 3 * e) + (e * e + e) + (e * inter + inter) + (inter * e + e)
    expected = 32 * block + (2 * e + merged * merged + merged + merged * 3584 + 3584) + e * 3 * 2 * 14 * 14
    assert parse_config(cfg, "qwen2-vl").vision_params == expected
    assert 670e6 < expected < 680e6   # Qwen2-VL-7B: 8.29B total, 7.62B of them the text model


def test_llava_counts_clip_tower_and_projector():
    v = {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
         "num_attention_heads": 16, "image_size": 336, "patch_size": 14, "projection_dim": 768}
    text = {k: SMALL[k] for k in SMALL if k not in ("architectures",)}
    cfg = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
           "text_config": {**text, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32},
           "vision_config": v}
    h, i = 1024, 4096
    tower = 24 * (4 * h * h + 2 * h * i)
    projector = h * 4096 + 4096 + 4096 * 4096 + 4096   # llava.py LlavaMultiModalProjector
    a = parse_config(cfg, "llava")
    assert a.vision_params == tower + projector
    # openai/clip-vit-large-patch14-336's vision model: 303.5M parameters
    assert 0.99 < tower / 303_507_456 < 1


def test_sparse_clip_vision_config_takes_the_class_defaults():
    text = {k: SMALL[k] for k in SMALL if k != "architectures"}
    cfg = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "text_config": text,
           "vision_config": {"image_size": 336}}
    assert parse_config(cfg, "llava").vision_params == 12 * (4 * 768**2 + 2 * 768 * 3072) + 768 * 512 + 512 * 512 \
        + 2 * 512


def test_vision_config_without_layers_is_refused_not_zero():
    cfg = {**SMALL, "architectures": ["SomeVLForConditionalGeneration"],
           "vision_config": {"hidden_size": 1024, "intermediate_size": 4096}}
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        parse_config(cfg, "vl")


def test_mllama_is_refused_by_name(cli, tmp_path):
    cfg = {"architectures": ["MllamaForConditionalGeneration"], "model_type": "mllama",
           "text_config": {**SMALL, "model_type": "mllama_text_model", "cross_attention_layers": [3]},
           "vision_config": {"hidden_size": 1280, "num_hidden_layers": 32, "intermediate_size": 5120,
                             "image_size": 560, "patch_size": 14}}
    with pytest.raises(UnsupportedArchitectureError, match="MllamaForConditionalGeneration"):
        parse_config(cfg, "mllama")
    r = cli("plan", "--model", _write(tmp_path, cfg), "--model-source", "acme/m", "--instance", H100)
    one_line_error(r, "MllamaForConditionalGeneration", "0.10.2")


def test_vision_tower_weights_reach_the_plan(tmp_path):
    v = {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
         "image_size": 336, "patch_size": 14}
    with_tower = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
                  "text_config": {**SMALL, "model_type": "llama"}, "vision_config": v}
    plain = _plan(_write(tmp_path, SMALL, "plain.json"), instance="g6e.xlarge").memory.weights_bytes_total
    tower = _plan(_write(tmp_path, with_tower, "vl.json"), instance="g6e.xlarge").memory.weights_bytes_total
    a = parse_config(with_tower, "vl")
    assert tower - plain == a.vision_params * 2 and a.vision_params > 300e6


# -- 4. bounds ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key,value,needle", [
    ("num_hidden_layers", 10**9, "at most 1,024"),
    # beyond 2**53 the JSON reader refuses it first (core/json_input.py), still naming the key
    ("num_hidden_layers", 10**400, "out of range"),
    ("hidden_size", 2**40, "at most 2,147,483,647"),
    ("vocab_size", 2**63, "out of range"),
    ("max_position_embeddings", 2**32, "at most 2,147,483,647"),
])
def test_absurd_config_integers_name_the_key(cli, tmp_path, key, value, needle):
    started = time.monotonic()
    r = cli("plan", "--model", _write(tmp_path, {**SMALL, key: value}), "--model-source", "acme/m",
            "--instance", "g6e.xlarge")
    one_line_error(r, f"'{key}'", needle)
    assert time.monotonic() - started < 10


def test_integer_beyond_what_python_converts(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL).replace('"hidden_size": 512', '"hidden_size": ' + "9" * 5000))
    one_line_error(cli("plan", "--model", str(path), "--model-source", "acme/m", "--instance", "g6e.xlarge"),
                   "--model", "config.json")


def test_integer_beyond_float_range(cli, tmp_path):
    # JSON 1e400 reads as float infinity: refused as not an integer
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL).replace('"num_hidden_layers": 4', '"num_hidden_layers": 1e400'))
    one_line_error(cli("plan", "--model", str(path), "--model-source", "acme/m", "--instance", "g6e.xlarge"),
                   "'num_hidden_layers'")


def test_vision_tower_layers_are_bounded(tmp_path):
    cfg = {**SMALL, "vision_config": {"depth": 10**9, "hidden_size": 64, "intermediate_size": 128}}
    with pytest.raises(ModelConfigError, match="'depth' must be at most 1,024"):
        parse_config(cfg, "vl")


def test_gpus_per_node_is_bounded(cli):
    r = cli("plan", "--model", "llama-3.1-8b-instruct", "--gpu-memory-mib", "81559", "--gpus-per-node", "100000")
    one_line_error(r, "--gpus-per-node", "64")


def test_total_parameters_of_the_largest_allowed_shape_is_quick():
    cfg = {**SMALL, "num_hidden_layers": 1024, "hidden_size": 2**20, "num_attention_heads": 2**10,
           "num_key_value_heads": 2**10, "intermediate_size": 2**22, "vocab_size": 2**20}
    started = time.monotonic()
    assert total_parameters(parse_config(cfg, "big")) > 0
    assert time.monotonic() - started < 5

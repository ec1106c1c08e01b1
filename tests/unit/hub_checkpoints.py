"""Safetensors checkpoints synthesized from the public config.json files in data/hub/: for each
repo, the tensor names, shapes and dtypes its checkpoint stores (packed formats as stored: AWQ
qweight/qzeros int32 with fp16 scales, GPTQ the same plus g_idx, block FP8 weights with fp32
scale_inv tensors, MXFP4 expert blocks and scales as uint8), written as safetensors headers with
zero-filled data of the right length, sharded at 5 GB with a model.safetensors.index.json as the
Hub's repos are. The stand-in (tests/harness/fake_hub.py) serves them without holding the data.

The names follow the checkpoints the Hub holds (e.g. `model.layers.0.self_attn.q_proj.weight`,
Mixtral's `block_sparse_moe.experts.N.w1`, gpt-oss's `mlp.experts.gate_up_proj_blocks`); the
shapes follow from each config. They stand in for checkpoints we cannot download here: the test
proves the planner counts what the headers say, byte for byte."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from tests.harness.fake_hub import FakeRepo, LazyFile

DATA = Path(__file__).parent / "data" / "hub"
SHARD_BYTES = 5 * 10**9
DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "U8": 1, "F8_E4M3": 1}
TORCH_DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}

Tensors = dict[str, tuple[str, tuple[int, ...]]]


def repos() -> list[str]:
    return sorted(str(p.parent.relative_to(DATA)) for p in DATA.glob("*/*/config.json"))


def config_path(repo: str) -> Path:
    return DATA / repo / "config.json"


def nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    return math.prod(shape) * DTYPE_BYTES[dtype]


def _linear(t: Tensors, name: str, out: int, inp: int, dt: str, quant: dict | None, bias: bool = False) -> None:
    """One linear layer `name` (without .weight) as the checkpoint stores it."""
    method = (quant or {}).get("quant_method")
    if method in ("awq", "gptq"):
        g = quant["group_size"]
        if method == "awq":
            t[f"{name}.qweight"] = ("I32", (inp, out // 8))
        else:
            t[f"{name}.qweight"] = ("I32", (inp // 8, out))
            t[f"{name}.g_idx"] = ("I32", (inp,))
        t[f"{name}.qzeros"] = ("I32", (inp // g, out // 8))
        t[f"{name}.scales"] = ("F16", (inp // g, out))
    elif method == "fp8":
        bo, bi = quant["weight_block_size"]
        t[f"{name}.weight"] = ("F8_E4M3", (out, inp))
        t[f"{name}.weight_scale_inv"] = ("F32", (math.ceil(out / bo), math.ceil(inp / bi)))
    else:
        t[f"{name}.weight"] = (dt, (out, inp))
    if bias:
        t[f"{name}.bias"] = (dt, (out,))


def tensors(cfg: dict) -> Tensors:
    mt = cfg["model_type"]
    dt = TORCH_DTYPES[cfg.get("torch_dtype", "bfloat16")]
    quant = cfg.get("quantization_config")
    h, n_layers, vocab = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim") or h // heads
    inter = cfg["intermediate_size"]
    qlin = quant if quant and quant.get("quant_method") in ("awq", "gptq", "fp8") else None
    t: Tensors = {"model.embed_tokens.weight": (dt, (vocab, h))}
    for i in range(n_layers):
        p = f"model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = (dt, (h,))
        t[f"{p}.post_attention_layernorm.weight"] = (dt, (h,))
        if mt == "gemma2":
            t[f"{p}.pre_feedforward_layernorm.weight"] = (dt, (h,))
            t[f"{p}.post_feedforward_layernorm.weight"] = (dt, (h,))
        # -- the token mixer
        if mt == "granitemoehybrid" and cfg["layer_types"][i] == "mamba":
            d_inner = cfg["mamba_expand"] * h
            ng, ds, nh = cfg["mamba_n_groups"], cfg["mamba_d_state"], cfg["mamba_n_heads"]
            conv = d_inner + 2 * ng * ds
            t[f"{p}.mamba.in_proj.weight"] = (dt, (2 * d_inner + 2 * ng * ds + nh, h))
            t[f"{p}.mamba.conv1d.weight"] = (dt, (conv, 1, cfg["mamba_d_conv"]))
            t[f"{p}.mamba.conv1d.bias"] = (dt, (conv,))
            for k in ("dt_bias", "A_log", "D"):
                t[f"{p}.mamba.{k}"] = (dt, (nh,))
            t[f"{p}.mamba.norm.weight"] = (dt, (d_inner,))
            t[f"{p}.mamba.out_proj.weight"] = (dt, (h, d_inner))
        elif cfg.get("kv_lora_rank"):
            nope, rope, v, r = (cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"],
                                cfg["kv_lora_rank"])
            a = f"{p}.self_attn"
            t[f"{a}.q_proj.weight"] = (dt, (heads * (nope + rope), h))
            t[f"{a}.kv_a_proj_with_mqa.weight"] = (dt, (r + rope, h))
            t[f"{a}.kv_a_layernorm.weight"] = (dt, (r,))
            t[f"{a}.kv_b_proj.weight"] = (dt, (heads * (nope + v), r))
            t[f"{a}.o_proj.weight"] = (dt, (h, heads * v))
        elif mt == "phi3":
            _linear(t, f"{p}.self_attn.qkv_proj", (heads + 2 * kv) * hd, h, dt, qlin)
            _linear(t, f"{p}.self_attn.o_proj", h, heads * hd, dt, qlin)
        else:
            a = f"{p}.self_attn"
            bias = mt in ("qwen2", "qwen2_5_vl") or cfg.get("attention_bias", False)
            _linear(t, f"{a}.q_proj", heads * hd, h, dt, qlin, bias)
            _linear(t, f"{a}.k_proj", kv * hd, h, dt, qlin, bias)
            _linear(t, f"{a}.v_proj", kv * hd, h, dt, qlin, bias)
            _linear(t, f"{a}.o_proj", h, heads * hd, dt, qlin, mt == "gpt_oss")
            if mt == "qwen3":
                t[f"{a}.q_norm.weight"] = (dt, (hd,))
                t[f"{a}.k_norm.weight"] = (dt, (hd,))
            if mt == "gpt_oss":
                t[f"{a}.sinks"] = (dt, (heads,))
        # -- the feed-forward block
        if mt == "mixtral":
            e = cfg["num_local_experts"]
            t[f"{p}.block_sparse_moe.gate.weight"] = (dt, (e, h))
            for j in range(e):
                x = f"{p}.block_sparse_moe.experts.{j}"
                t[f"{x}.w1.weight"] = (dt, (inter, h))
                t[f"{x}.w3.weight"] = (dt, (inter, h))
                t[f"{x}.w2.weight"] = (dt, (h, inter))
        elif mt == "deepseek_v2" and i >= cfg["first_k_dense_replace"]:
            e, mi = cfg["n_routed_experts"], cfg["moe_intermediate_size"]
            t[f"{p}.mlp.gate.weight"] = (dt, (e, h))
            for j in range(e):
                for k, shape in (("gate_proj", (mi, h)), ("up_proj", (mi, h)), ("down_proj", (h, mi))):
                    t[f"{p}.mlp.experts.{j}.{k}.weight"] = (dt, shape)
            si = mi * cfg["n_shared_experts"]
            for k, shape in (("gate_proj", (si, h)), ("up_proj", (si, h)), ("down_proj", (h, si))):
                t[f"{p}.mlp.shared_experts.{k}.weight"] = (dt, shape)
        elif mt == "gpt_oss":
            e = cfg["num_local_experts"]
            m = f"{p}.mlp"
            t[f"{m}.router.weight"] = (dt, (e, h))
            t[f"{m}.router.bias"] = (dt, (e,))
            # MXFP4: 32 values per block, two per byte (16 bytes), one uint8 exponent per block
            t[f"{m}.experts.gate_up_proj_blocks"] = ("U8", (e, 2 * inter, h // 32, 16))
            t[f"{m}.experts.gate_up_proj_scales"] = ("U8", (e, 2 * inter, h // 32))
            t[f"{m}.experts.gate_up_proj_bias"] = (dt, (e, 2 * inter))
            t[f"{m}.experts.down_proj_blocks"] = ("U8", (e, h, inter // 32, 16))
            t[f"{m}.experts.down_proj_scales"] = ("U8", (e, h, inter // 32))
            t[f"{m}.experts.down_proj_bias"] = (dt, (e, h))
        elif mt == "granitemoehybrid":
            e, si = cfg["num_local_experts"], cfg["shared_intermediate_size"]
            t[f"{p}.block_sparse_moe.router.layer.weight"] = (dt, (e, h))
            t[f"{p}.block_sparse_moe.input_linear.weight"] = (dt, (e, 2 * inter, h))
            t[f"{p}.block_sparse_moe.output_linear.weight"] = (dt, (e, h, inter))
            t[f"{p}.shared_mlp.input_linear.weight"] = (dt, (2 * si, h))
            t[f"{p}.shared_mlp.output_linear.weight"] = (dt, (h, si))
        elif mt == "phi3":
            _linear(t, f"{p}.mlp.gate_up_proj", 2 * inter, h, dt, qlin)
            _linear(t, f"{p}.mlp.down_proj", h, inter, dt, qlin)
        else:
            _linear(t, f"{p}.mlp.gate_proj", inter, h, dt, qlin)
            _linear(t, f"{p}.mlp.up_proj", inter, h, dt, qlin)
            _linear(t, f"{p}.mlp.down_proj", h, inter, dt, qlin)
    t["model.norm.weight"] = (dt, (h,))
    tied = cfg.get("tie_word_embeddings", mt.startswith("gemma") or mt == "granitemoehybrid")
    if not tied:
        t["lm_head.weight"] = (dt, (vocab, h))
    if "vision_config" in cfg:
        t.update(_qwen_vl_tower(cfg["vision_config"], dt))
    return t


def _qwen_vl_tower(v: dict, dt: str) -> Tensors:
    """Qwen2.5-VL's vision tower as its checkpoint stores it (`visual.`): patch embedding, `depth`
    blocks of fused-qkv attention and a gated MLP with biases, and the patch merger."""
    h, inter, out = v["hidden_size"], v["intermediate_size"], v["out_hidden_size"]
    merged = h * v["spatial_merge_size"] ** 2
    t: Tensors = {"visual.patch_embed.proj.weight": (dt, (h, v["in_chans"], v["temporal_patch_size"],
                                                          v["patch_size"], v["patch_size"]))}
    for i in range(v["depth"]):
        b = f"visual.blocks.{i}"
        t[f"{b}.norm1.weight"] = (dt, (h,))
        t[f"{b}.norm2.weight"] = (dt, (h,))
        t[f"{b}.attn.qkv.weight"] = (dt, (3 * h, h))
        t[f"{b}.attn.qkv.bias"] = (dt, (3 * h,))
        t[f"{b}.attn.proj.weight"] = (dt, (h, h))
        t[f"{b}.attn.proj.bias"] = (dt, (h,))
        for k, shape in (("gate_proj", (inter, h)), ("up_proj", (inter, h)), ("down_proj", (h, inter))):
            t[f"{b}.mlp.{k}.weight"] = (dt, shape)
            t[f"{b}.mlp.{k}.bias"] = (dt, (shape[0],))
    t["visual.merger.ln_q.weight"] = (dt, (h,))
    t["visual.merger.mlp.0.weight"] = (dt, (merged, merged))
    t["visual.merger.mlp.0.bias"] = (dt, (merged,))
    t["visual.merger.mlp.2.weight"] = (dt, (out, merged))
    t["visual.merger.mlp.2.bias"] = (dt, (out,))
    return t


def safetensors_file(ts: Tensors) -> LazyFile:
    """A safetensors file of these tensors: u64 header length, JSON header (padded with spaces to
    8 bytes as the format's writer does), then the data, zero-filled."""
    header: dict = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, (dtype, shape) in ts.items():
        n = nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return LazyFile(struct.pack("<Q", len(raw)) + raw, 8 + len(raw) + off)


def checkpoint_files(ts: Tensors) -> dict[str, bytes | LazyFile]:
    """The repo's safetensors files: one model.safetensors, or 5 GB shards and their index."""
    shards: list[Tensors] = [{}]
    size = 0
    for name, spec in ts.items():
        n = nbytes(*spec)
        if shards[-1] and size + n > SHARD_BYTES:
            shards.append({})
            size = 0
        shards[-1][name] = spec
        size += n
    if len(shards) == 1:
        return {"model.safetensors": safetensors_file(shards[0])}
    files: dict[str, bytes | LazyFile] = {}
    weight_map = {}
    for k, shard in enumerate(shards, 1):
        fname = f"model-{k:05d}-of-{len(shards):05d}.safetensors"
        files[fname] = safetensors_file(shard)
        weight_map.update({name: fname for name in shard})
    index = {"metadata": {"total_size": sum(nbytes(*s) for s in ts.values())}, "weight_map": weight_map}
    files["model.safetensors.index.json"] = json.dumps(index, indent=2).encode()
    return files


def fake_repo(repo: str, **kw) -> FakeRepo:
    """The stand-in repo: config.json, a tokenizer file and the synthesized checkpoint."""
    cfg_bytes = config_path(repo).read_bytes()
    ckpt = checkpoint_files(tensors(json.loads(cfg_bytes)))
    files: dict[str, bytes | LazyFile] = {"config.json": cfg_bytes, "tokenizer_config.json": b"{}", **ckpt}
    lfs = {n for n in ckpt if n.endswith(".safetensors")}
    return FakeRepo(repo=repo, files=files, lfs=lfs, **kw)

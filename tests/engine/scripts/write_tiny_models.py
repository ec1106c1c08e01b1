"""Write tiny random-weight models that vLLM's CPU backend serves, with no hub access.

Runs inside the engine venv (transformers and tokenizers live there). Usage:
    python write_tiny_models.py OUT_DIR [NAME...]      (no NAME: every model below)
prints a JSON manifest {name: {"path": ..., "architecture": ..., "config": ...}} on stdout.

Each model is a real architecture the catalog covers, shrunk to a couple of layers so that it
loads in a second; only the shapes that drive KV sizing (layers, KV heads, head_dim, dtype,
sliding window) matter to the tests, and those are varied on purpose:
  - llama:  Llama-style GQA (4 query heads, 2 KV heads, head_dim = hidden/heads = 32)
  - qwen2:  Qwen2-style (attention bias on q/k/v, 1 KV head, tied embeddings)
  - qwen3:  Qwen3-style (per-head RMSNorm on q and k, no attention bias, 2 KV heads of an
    explicit head_dim 32)
  - mistral-swa: Mistral-style with an explicit head_dim (64, not hidden/heads) and a sliding
    window on every layer, so the KV cache uses vLLM's sliding-window spec.
  - gpt-oss: gpt-oss-style mixture of experts (4 experts, top-2, bf16: the MXFP4 expert format
    has no CPU kernel) with attention sinks, YaRN RoPE and alternating sliding-window / full
    attention layers, so the KV cache has two layer groups.
  - deepseek-v3: DeepSeek-V3-style MLA attention with the real latent width (kv_lora_rank 512 +
    qk_rope_head_dim 64 = 576: vLLM's CPU MLA decode kernel compiles for that size only,
    vllm/v1/attention/backends/mla/cpu_mla.py) and a q LoRA, YaRN RoPE as the real checkpoint
    (factor 40 on 4096 positions = 163840), one dense layer (first_k_dense_replace 1) then one
    MoE layer of 8 routed experts in 4 groups (topk_group 2, top-2, sigmoid scores with a
    correction bias) plus 1 shared expert; bf16 weights, no quantization_config (the real
    checkpoint's FP8 128x128 blocks are not reproduced), no MTP layer.
  - qwen3-next: Qwen3-Next-style hybrid, 3 Gated DeltaNet layers then 1 gated full-attention
    layer (full_attention_interval 4) and MoE (4 experts top-2 + shared expert). The linear
    heads (4 key / 8 value heads of 64) make one layer's state (conv 3 x 512 channels + 8 x
    64 x 64, bf16 = 71,680 B) larger than a 128-token attention page (128 x 2 x 2 x 64 x 2 B
    = 65,536 B), so vLLM raises the block size to 256 as it does for the real model.
  - llama4-chunked: Llama 4-style text model (Llama4ForCausalLM) with 256-token chunked local
    attention in 3 of 4 layers (no_rope_layer_interval 4), MoE (2 experts top-1 + shared
    expert) in every layer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    DeepseekV3Config,
    DeepseekV3ForCausalLM,
    GptOssConfig,
    GptOssForCausalLM,
    Llama4ForCausalLM,
    Llama4TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3NextConfig,
    Qwen3NextForCausalLM,
)

# A chat template in the common role-marker style; vLLM renders it for /v1/chat/completions.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}</s>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = ["<s>", "</s>", "<pad>", "<|system|>", "<|user|>", "<|assistant|>"]
VOCAB_SIZE = 512
# Long enough for any max_model_len the scenarios render (the tests serve with those values).
MAX_POSITIONS = 131072
# DeepSeek-V3's own context (config.json: max_position_embeddings 163840, YaRN factor 40 on
# original_max_position_embeddings 4096); its scenario renders --max-model-len 163840.
DEEPSEEK_V3_POSITIONS = 163840

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Serving large language models needs memory for weights and for the KV cache.",
    "Kubernetes schedules pods onto nodes that have free GPUs.",
    "Hello, how are you today? I am fine, thank you.",
    "vLLM pages the attention cache in blocks of tokens.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000.",
]


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE: every byte string is representable, so no input can be unknown."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def common(tokenizer: PreTrainedTokenizerFast) -> dict:
    return dict(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def specs(tokenizer: PreTrainedTokenizerFast) -> dict[str, tuple[type, object]]:
    base = common(tokenizer)
    return {
        "llama": (LlamaForCausalLM, LlamaConfig(
            **base, num_key_value_heads=2, rope_theta=500000.0, tie_word_embeddings=False)),
        "qwen2": (Qwen2ForCausalLM, Qwen2Config(
            **base, num_key_value_heads=1, rope_theta=1000000.0, tie_word_embeddings=True,
            use_sliding_window=False)),
        "qwen3": (Qwen3ForCausalLM, Qwen3Config(
            **base, num_key_value_heads=2, head_dim=32, rope_theta=1000000.0,
            attention_bias=False, use_sliding_window=False, tie_word_embeddings=False)),
        "mistral-swa": (MistralForCausalLM, MistralConfig(
            **base, num_key_value_heads=2, head_dim=64, sliding_window=256,
            rope_theta=10000.0, tie_word_embeddings=False)),
        "gpt-oss": (GptOssForCausalLM, GptOssConfig(
            **base, num_key_value_heads=2, head_dim=64, num_local_experts=4,
            num_experts_per_tok=2, sliding_window=128,
            layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False,
            rope_scaling={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                          "beta_slow": 1.0, "truncate": False,
                          "original_max_position_embeddings": 4096})),
        "deepseek-v3": (DeepseekV3ForCausalLM, DeepseekV3Config(
            **{**base, "max_position_embeddings": DEEPSEEK_V3_POSITIONS},
            num_key_value_heads=4, q_lora_rank=64, kv_lora_rank=512, qk_rope_head_dim=64,
            qk_nope_head_dim=32, v_head_dim=32, first_k_dense_replace=1, moe_layer_freq=1,
            n_routed_experts=8, n_shared_experts=1, moe_intermediate_size=64,
            num_experts_per_tok=2, n_group=4, topk_group=2, topk_method="noaux_tc",
            scoring_func="sigmoid", norm_topk_prob=True, routed_scaling_factor=2.5,
            num_nextn_predict_layers=0, tie_word_embeddings=False,
            rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                             "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
                             "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096})),
        "qwen3-next": (Qwen3NextForCausalLM, Qwen3NextConfig(
            **{**base, "num_hidden_layers": 4}, num_key_value_heads=2, head_dim=64,
            full_attention_interval=4, linear_num_key_heads=4, linear_num_value_heads=8,
            linear_key_head_dim=64, linear_value_head_dim=64, linear_conv_kernel_dim=4,
            num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64,
            shared_expert_intermediate_size=64, decoder_sparse_step=1, mlp_only_layers=[],
            tie_word_embeddings=False)),
        "llama4-chunked": (Llama4ForCausalLM, Llama4TextConfig(
            **{**base, "num_hidden_layers": 4}, num_key_value_heads=2, head_dim=32,
            intermediate_size_mlp=256, num_local_experts=2, num_experts_per_tok=1,
            interleave_moe_layer_step=1, attention_chunk_size=256, no_rope_layer_interval=4,
            use_qk_norm=False, tie_word_embeddings=False)),
    }


def main() -> None:
    out = Path(sys.argv[1])
    only = set(sys.argv[2:])  # names to write; none: all of them
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    tokenizer = build_tokenizer()
    manifest = {}
    for name, (cls, config) in specs(tokenizer).items():
        if only and name not in only:
            continue
        path = out / name
        model = cls(config).to(torch.bfloat16)
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        cfg = json.loads((path / "config.json").read_text())
        manifest[name] = {"path": str(path), "architecture": cfg["architectures"][0], "config": cfg}
    json.dump(manifest, sys.stdout)


if __name__ == "__main__":
    main()

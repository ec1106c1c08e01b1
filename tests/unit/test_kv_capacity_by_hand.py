"""KV bytes per token and KV capacity of catalog families whose cache is not one plain K/V per
layer, computed by hand here from vLLM 0.32's rules: DeepSeek-V3.2 (MLA latent plus the sparse
indexer's key cache, block size 64) and Gemma 3 (five sliding layers per global layer, hybrid
allocator groups). The available KV bytes are the Plan's (the budget has its own tests); what is
checked is everything that follows from them."""

from __future__ import annotations

import math

import pytest

from vllm_eks.catalog.models import resolve_model
from vllm_eks.model import weights
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest


def _plan(**kw):
    return make_plan(PlanRequest(**kw))


# DeepSeek-V3.2, per token and layer: the MLA latent (kv_lora_rank 512 + rope 64) in bf16 (vLLM's
# "auto" cache for V3.2) = 1152 B, plus the indexer key: 128 fp8 values + one float32 scale per
# 128 = 132 B. Both caches are full attention with block size 64, so vLLM keeps them in one KV
# cache group whose page per layer is the sum.
V32_BF16 = (512 + 64) * 2 + 128 + 4
# --kv-cache-dtype fp8: the fp8_ds_mla row (512 fp8 + 4 float32 scales + 64 bf16 rope) = 656 B
V32_FP8 = 512 + 16 + 128 + 132


@pytest.mark.parametrize(("instance", "kv", "per_layer", "pp", "layers", "worst_layers"), [
    ("p5e.48xlarge", "auto", V32_BF16, 1, 61, 61),   # H200: 8 x 141 GB hold the 690 GB of FP8 weights
    # H100: two nodes; the first stage has 31 of the 61 layers (the most KV bytes per token), the
    # last 30 and the LM head, which leave it the fewest blocks: vLLM takes the smaller pool
    ("p5.48xlarge", "auto", V32_BF16, 2, 31, 30),
    ("p5e.48xlarge", "fp8", V32_FP8, 1, 61, 61),
])
def test_deepseek_v32_kv_bytes_and_capacity(instance, kv, per_layer, pp, layers, worst_layers):
    p = _plan(model="deepseek-v3.2", instance=instance, kv_cache_dtype=kv)
    m = p.memory
    assert (p.layout.tensor_parallel_size, p.layout.pipeline_parallel_size) == (8, pp)
    assert m.block_size == 64
    assert per_layer == (1284 if kv == "auto" else 788)
    # MLA and indexer rows are whole on every TP rank
    assert m.kv_bytes_per_token_per_gpu == per_layer * layers
    blocks = m.available_kv_cache_bytes_per_gpu // (per_layer * 64 * worst_layers)
    assert m.kv_cache_blocks == blocks
    per_request = math.ceil(m.max_model_len / 64)
    assert m.kv_cache_tokens == int(blocks / per_request * m.max_model_len)
    assert m.max_concurrency == round(blocks / per_request, 2)


def test_deepseek_v32_weights_count_the_indexer():
    v3 = resolve_model("deepseek-v3").architecture
    v32 = resolve_model("deepseek-v3.2").architecture
    # per layer: wq_b 1536 x (64 x 128), wk_weights_proj 7168 x (128 + 64), k_norm 2 x 128
    assert weights.total_parameters(v32) - weights.total_parameters(v3) == 61 * (
        1536 * 8192 + 7168 * 192 + 256)


def test_deepseek_v32_refused_where_vllm_has_no_sparse_backend(cli):
    r = cli("plan", "--model", "deepseek-v3.2", "--instance", "p4de.24xlarge")
    assert r.exit_code == 1 and "\n" not in r.stderr.strip()
    assert "--instance" in r.stderr and "SM 8.0" in r.stderr and "FLASHMLA_SPARSE" in r.stderr


def test_gemma_3_27b_kv_bytes_and_capacity():
    # 62 layers: every 6th global (10), the other 52 slide over 1024 tokens; 16 KV heads x 128 x 2
    # (K and V) x 2 B = 8192 B per token per layer on one 80 GB A100 (FLASH_ATTN, block 16)
    p = _plan(model="gemma-3-27b-it", instance="p4de.24xlarge", tensor_parallel_size=1)
    m, e = p.memory, p.engine
    assert (p.layout.tensor_parallel_size, p.layout.pipeline_parallel_size, m.block_size) == (1, 1, 16)
    assert m.kv_bytes_per_token_per_gpu == 8192 * 62
    # hybrid allocator: groups of min(10, 52) = 10 layers (52 >= 1.5 x 10); 1 full group, 5 sliding
    # groups of 10 and one of 2, padded to 10: a block is 8192 x 16 x 10 B
    blocks = m.available_kv_cache_bytes_per_gpu // (8192 * 16 * 10)
    assert m.kv_cache_blocks == blocks
    in_flight = 2 * e.max_num_batched_tokens          # async scheduling: two steps in flight
    sliding = math.ceil(min(1024 - 1 + in_flight, m.max_model_len) / 16) + 1
    per_request = math.ceil(m.max_model_len / 16) + 6 * sliding
    assert m.kv_cache_tokens == int(blocks / per_request * m.max_model_len)
    assert m.max_concurrency == round(blocks / per_request, 2)

"""Figures from the 70B-on-EKS guide , reproduced by the engine."""

from vllm_eks.catalog.models import resolve_model
from vllm_eks.memory import kvcache
from vllm_eks.model import weights
from vllm_eks.model.weights import precision_for

GB = 1e9


def test_llama_70b_kv_bytes_per_token_at_tp1():
    a = resolve_model("llama-3.1-70b-instruct").architecture
    lay = kvcache.layout(a, tp=1, layers=range(a.num_layers), kv_dtype_bytes=2)
    assert lay.bytes_per_token == 327_680  # 2 x 80 x 8 x 128 x 2


def test_llama_70b_weights_fp16_and_fp8():
    a = resolve_model("llama-3.1-70b-instruct").architecture
    fp16 = weights.bytes_total(a, precision_for(a, 2, None, "linear"))
    fp8 = weights.bytes_total(a, precision_for(a, 2, 8.0, "linear"))
    assert 138 * GB < fp16 < 143 * GB   # "~140 GB"
    assert 68 * GB < fp8 < 74 * GB      # "~70 GB": embeddings and LM head stay 16-bit


def test_llama_70b_fp8_through_the_cli(plan_json):
    p = plan_json("--model", "llama-3.1-70b-instruct", "--instance", "p5.48xlarge", "--quantization", "fp8")
    assert 68 * GB < p["weights_bytes_total"] < 74 * GB
    assert "--quantization" in p["engine_args"]


def test_qwen_05b_figure_2_exactly(plan_json):
    p = plan_json("--model", "Qwen/Qwen2.5-0.5B-Instruct", "--instance", "g6e.xlarge",
                  "--kv-cache-memory", "2", "--block-size", "128", "--max-model-len", "4096")
    assert p["kv_bytes_per_token_per_gpu"] == 12_288
    assert p["kv_cache_tokens"] == 174_720
    assert f"{p['max_concurrency']:.2f}" == "42.66"
    assert "--kv-cache-memory-bytes" in p["engine_args"]
    assert p["engine_args"][p["engine_args"].index("--kv-cache-memory-bytes") + 1] == str(2 * 1024**3)


def test_logged_tokens_follow_concurrency_when_context_is_not_whole_blocks(plan_json):
    # vLLM 0.32 logs int(max_concurrency x max_model_len): 1365 blocks / cdiv(4000, 128) = 32
    # blocks per request -> 42.66x -> 170,625 tokens, not 1365 x 128
    p = plan_json("--model", "qwen2.5-0.5b-instruct", "--instance", "g6e.xlarge",
                  "--kv-cache-memory", "2", "--block-size", "128", "--max-model-len", "4000")
    assert p["kv_cache_blocks"] == 1365
    assert p["kv_cache_tokens"] == int(1365 / 32 * 4000)

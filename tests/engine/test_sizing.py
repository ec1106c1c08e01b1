"""The generator's KV cache prediction equals the engine's own log line, for each tiny model
under budgets and context lengths other than the scenarios' (those are checked on the
scenario servers in test_serve). One server per case, stopped when the next starts."""

from __future__ import annotations

import pytest

from tests.engine.engine_plans import predict, prediction_caveat
from tests.engine.report import REPORT

# (tiny model, KV GiB, max_model_len). Block size 128: the CPU default.
CASES = [
    ("llama", 2, 1000),  # a context that is not a whole number of blocks
    ("qwen2", 3, 4096),
    ("mistral-swa", 1, 2048),  # sliding window 256 < max_model_len: sliding-window KV spec
    ("gpt-oss", 1, 8192),  # alternating sliding (128) / full layers: two KV layer groups
    # Gated DeltaNet hybrid: 3 state layers + 1 attention layer, four groups of one layer; the
    # state (71,680 B) outgrows a 128-token page, so vLLM raises the block size to 256
    ("qwen3-next", 2, 6000),
    # 256-token chunked local attention in 3 of 4 layers: a request of 16384 tokens holds one
    # chunk plus the batch in flight in each chunked group
    ("llama4-chunked", 1, 16384),
]
# Engine settings the generator's Plan always sets and the CPU build would otherwise change:
# - prefix caching on (the Plan's --enable-prefix-caching), which puts hybrid state layers in
#   mamba_cache_mode "align" (2 state blocks per request and group);
# - the SSM state in the model dtype: vLLM's CPU platform resets --mamba-ssm-cache-dtype "auto"
#   to float32 on CPUs with AVX512-BF16 unless bfloat16 is asked for and its accelerated Gated
#   DeltaNet kernel takes it (vllm/platforms/cpu.py check_and_update_config); on a GPU "auto"
#   is the model dtype, bfloat16, which is what the generator sizes.
EXTRA_ARGS = {"qwen3-next": ["--enable-prefix-caching", "--mamba-ssm-cache-dtype", "bfloat16"]}
BLOCK_SIZE = 128
# Batch limits given to both the engine and the generator: a sliding-window layer keeps
# window - 1 + max_num_batched_tokens tokens per request, so both must use the same value.
MAX_NUM_BATCHED_TOKENS = 4096
MAX_NUM_SEQS = 64


@pytest.mark.parametrize("tiny,kv_gib,max_model_len", CASES,
                         ids=[f"{t}-{k}GiB-{n}" for t, k, n in CASES])
def test_engine_logs_generator_prediction(tiny: str, kv_gib: int, max_model_len: int,
                                          tiny_models, server_pool) -> None:
    path = tiny_models[tiny]["path"]
    # --enforce-eager: with an explicit KV budget the CPU worker then skips the warm-up compile
    # that would otherwise run before the sizing line (vllm/v1/worker/cpu_worker.py
    # _should_warm_up_model); the KV arithmetic does not depend on compilation.
    args = [path, "--max-model-len", str(max_model_len), "--block-size", str(BLOCK_SIZE),
            "--max-num-batched-tokens", str(MAX_NUM_BATCHED_TOKENS),
            "--max-num-seqs", str(MAX_NUM_SEQS), "--enforce-eager", "--host", "127.0.0.1",
            *EXTRA_ARGS.get(tiny, [])]
    env = {"VLLM_CPU_KVCACHE_SPACE": str(kv_gib)}
    srv = server_pool.get(("sizing", tiny, kv_gib, max_model_len),
                          f"sizing-{tiny}-{kv_gib}GiB-{max_model_len}", args, env)
    logged = srv.sizing()
    pred = predict(f"{path}/config.json", kv_cache_gib=kv_gib, block_size=BLOCK_SIZE,
                   max_model_len=max_model_len, max_num_seqs=MAX_NUM_SEQS,
                   max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS)
    matched = (pred.kv_cache_tokens == logged.tokens
               and pred.concurrency_as_logged == logged.max_concurrency)
    REPORT.sizing_case(
        f"{tiny} KV {kv_gib} GiB, block {BLOCK_SIZE}, len {max_model_len}: engine "
        f"{logged.tokens:,} tokens {logged.max_concurrency}x, generator "
        f"{pred.kv_cache_tokens:,} {pred.concurrency_as_logged}x", matched)
    assert logged.max_model_len == max_model_len, logged
    assert matched, (f"engine logged {logged}, generator predicted {pred}\n  {pred.command}"
                     + prediction_caveat())

"""The parallelism decisions of DESIGN §4 on the catalog's reference pairs."""

import json

import pytest


def test_llama_8b_on_g6e_xlarge_is_one_gpu(plan_json):
    p = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge")
    assert (p["topology"], p["tensor_parallel_size"], p["pipeline_parallel_size"]) == ("single-node", 1, 1)
    assert p["efa_devices_per_pod"] == 0


def test_llama_70b_fp16_on_p5_is_tp8_one_node(plan_json):
    p = plan_json("--model", "llama-3.1-70b-instruct", "--instance", "p5.48xlarge")
    assert (p["topology"], p["tensor_parallel_size"], p["pipeline_parallel_size"], p["nodes_per_replica"]) == \
        ("single-node", 8, 1, 1)
    assert p["kv_bytes_per_token_per_gpu"] == 327_680 // 8


def test_llama_405b_bf16_on_p5_is_tp8_pp2(plan_json):
    p = plan_json("--model", "llama-3.1-405b-instruct", "--instance", "p5.48xlarge")
    assert (p["topology"], p["tensor_parallel_size"], p["pipeline_parallel_size"], p["nodes_per_replica"]) == \
        ("multi-node", 8, 2, 2)
    assert p["efa_devices_per_pod"] == 32
    # vLLM's own multi-node launcher (no Ray): the chart adds --nnodes/--node-rank/--master-addr
    assert "--distributed-executor-backend" not in p["engine_args"]
    assert p["engine_args"][p["engine_args"].index("--pipeline-parallel-size") + 1] == "2"


@pytest.mark.parametrize("model,extra", [
    ("llama-3.1-405b-instruct", ["--quantization", "fp8"]),
    ("llama-3.1-405b-instruct-fp8", []),
])
def test_llama_405b_fp8_on_p5en_is_one_node(plan_json, model, extra):
    p = plan_json("--model", model, "--instance", "p5en.48xlarge", *extra)
    assert (p["topology"], p["tensor_parallel_size"], p["pipeline_parallel_size"]) == ("single-node", 8, 1)


def test_deepseek_v3_on_p5en_fits_with_mla_sizing(plan_json):
    p = plan_json("--model", "deepseek-v3", "--instance", "p5en.48xlarge")
    assert (p["topology"], p["tensor_parallel_size"], p["pipeline_parallel_size"]) == ("single-node", 8, 1)
    # MLA: (kv_lora_rank 512 + rope 64) x 2 B x 61 layers, not divided by TP
    assert p["kv_bytes_per_token_per_gpu"] == (512 + 64) * 2 * 61
    assert p["kv_cache_tokens"] > 100_000


def test_deepseek_v3_on_p5_needs_two_nodes(plan_json):
    p = plan_json("--model", "deepseek-v3", "--instance", "p5.48xlarge")
    assert (p["topology"], p["pipeline_parallel_size"]) == ("multi-node", 2)


def test_tp_below_kv_heads_replicates(plan_json):
    # 8 KV heads: at TP=8 each rank keeps one head, so per-GPU KV is 1/8 of TP=1
    one = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "p5.48xlarge", "--tensor-parallel-size", "1")
    eight = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "p5.48xlarge", "--tensor-parallel-size", "8")
    assert one["kv_bytes_per_token_per_gpu"] == 8 * eight["kv_bytes_per_token_per_gpu"]


def test_qwen_05b_two_kv_heads_split_over_tp2(plan_json):
    two = plan_json("--model", "qwen2.5-0.5b-instruct", "--instance", "g6.12xlarge", "--tensor-parallel-size", "2")
    # 14 heads: TP must divide them, 4 does not
    assert two["kv_bytes_per_token_per_gpu"] == 2 * 1 * 64 * 2 * 24


def test_fp8_kv_halves_bytes(plan_json):
    auto = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge")
    fp8 = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--kv-cache-dtype", "fp8")
    assert fp8["kv_bytes_per_token_per_gpu"] * 2 == auto["kv_bytes_per_token_per_gpu"]
    assert "--kv-cache-dtype" in fp8["engine_args"]


def test_sliding_window_layers_need_fewer_blocks(plan_json):
    p = plan_json("--model", "gpt-oss-120b", "--instance", "p5.48xlarge", "--max-model-len", "32768")
    full_blocks = 32768 // p["block_size"]
    # half the layers slide over 128 tokens: a request needs far fewer than 2 x full blocks
    assert p["max_concurrency"] > p["kv_cache_blocks"] / (2 * full_blocks)


def test_stable_json_keys(plan_json):
    p = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge")
    for key in ("model", "instance", "topology", "tensor_parallel_size", "pipeline_parallel_size",
                "nodes_per_replica", "replicas", "dtype", "kv_cache_dtype", "weights_bytes_total",
                "weights_bytes_per_gpu", "kv_bytes_per_token_per_gpu", "block_size",
                "available_kv_cache_bytes_per_gpu", "kv_cache_tokens", "max_model_len", "max_concurrency",
                "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens", "shm_size_bytes",
                "efa_devices_per_pod", "startup_probe_seconds", "cost_per_hour_usd", "engine_args"):
        assert key in p, key


def test_pod_sizing_is_consistent(plan_json):
    p = plan_json("--model", "llama-3.1-70b-instruct", "--instance", "p5.48xlarge")
    assert p["termination_grace_period_seconds"] > p["prestop_seconds"] + p["shutdown_timeout_seconds"]
    assert p["memory_request_bytes"] > p["shm_size_bytes"]
    assert p["startup_probe_seconds"] >= 180
    assert p["cost_per_hour_usd"] == pytest.approx(55.04)
    assert p["engine_args"][p["engine_args"].index("--shutdown-timeout") + 1] == str(p["shutdown_timeout_seconds"])


def test_price_override(plan_json):
    p = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--price-per-hour", "1.5")
    assert p["cost_per_hour_usd"] == pytest.approx(1.5)


def test_custom_hardware(plan_json):
    p = plan_json("--model", "llama-3.1-8b-instruct", "--gpu-memory-mib", "81559", "--gpus-per-node", "4",
                  "--hardware-name", "p6-b200.48xlarge")
    assert p["instance"] == "p6-b200.48xlarge" and p["tensor_parallel_size"] == 1 and p["replicas"] == 4


def test_target_concurrency_sets_replicas(plan_json):
    p = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--max-model-len", "8192",
                  "--target-concurrency", "100")
    assert p["replicas"] * p["max_concurrency"] >= 100
    assert (p["replicas"] - 1) * p["max_concurrency"] < 100


def test_explain_names_every_formula(cli):
    r = cli("explain", "--model", "llama-3.1-70b-instruct", "--instance", "p5.48xlarge")
    assert r.exit_code == 0
    for key in ("weights_bytes_per_gpu", "kv_bytes_per_token_per_gpu", "activation_peak_bytes",
                "available_kv_cache_bytes_per_gpu", "kv_cache_tokens", "max_concurrency", "shm_size_bytes",
                "startup_probe_seconds", "termination_grace_period_seconds"):
        assert f"\n{key} = " in "\n" + r.stdout, key
    assert "vllm serve <model> --served-model-name" in r.stdout


def test_seed_000_70b_fp16_tp4_on_one_g5_12xlarge_is_refused(cli):
    r = cli("plan", "--model", "llama-3.1-70b-instruct", "--instance", "g5.12xlarge",
            "--tensor-parallel-size", "4", "--pipeline-parallel-size", "1")
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert "\n" not in line
    assert "short by" in line and "GiB" in line
    assert "--pipeline-parallel-size 2" in line   # TP=4 x PP=2 over two g5.12xlarge
    assert "4-bit" in line


def test_ray_serve_topology_70b_on_g6e_12xlarge(plan_json):
    p = plan_json("--model", "llama-3.1-70b-instruct", "--instance", "g6e.12xlarge", "--topology", "ray-serve")
    assert p["topology"] == "ray-serve" and p["tensor_parallel_size"] == 4
    auto = p["serve_autoscaling"]
    assert auto["min_replicas"] == 1 and auto["max_replicas"] >= 2
    assert auto["target_ongoing_requests"] == p["max_num_seqs"] // 2


def test_disaggregated_pools_on_g6_8xlarge(plan_json):
    p = plan_json("--model", "qwen3-8b", "--instance", "g6.8xlarge", "--topology", "disaggregated",
                  "--max-model-len", "4096", "--decode-replicas", "2")
    assert p["topology"] == "disaggregated"
    assert p["decode"]["replicas"] == 2 and p["prefill"]["replicas"] == 1
    assert p["prefill"]["max_num_seqs"] <= p["decode"]["max_num_seqs"]
    assert p["efa_devices_per_pod"] == 1
    cfg = json.loads(p["decode"]["engine_args"][p["decode"]["engine_args"].index("--kv-transfer-config") + 1])
    assert cfg["kv_connector"] == "NixlConnector"
    assert cfg["kv_connector_extra_config"] == {"backends": ["LIBFABRIC"]}


def test_disaggregated_needs_efa(cli):
    r = cli("plan", "--model", "qwen3-8b", "--instance", "g6.xlarge", "--topology", "disaggregated")
    assert r.exit_code == 1 and "no EFA" in r.stderr


def test_async_scheduling_changes_sliding_window_capacity_only(plan_json):
    # the same context on both, so the capacities compare
    on = plan_json("--model", "gpt-oss-120b", "--instance", "p5.48xlarge", "--max-model-len", "32768")
    off = plan_json("--model", "gpt-oss-120b", "--instance", "p5.48xlarge", "--no-async-scheduling",
                    "--max-model-len", "32768")
    # one step in flight instead of two: a sliding group needs fewer blocks per request
    assert off["max_concurrency"] > on["max_concurrency"]
    assert "--no-async-scheduling" in off["engine_args"] and "--no-async-scheduling" not in on["engine_args"]
    dense_on = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge")
    dense_off = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--no-async-scheduling")
    assert dense_on["kv_cache_tokens"] == dense_off["kv_cache_tokens"]

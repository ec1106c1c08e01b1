"""Bad input: exit 1, one line on stderr naming the flag or file and what is valid, no traceback."""

import json

import pytest

M8, G6E = ["--model", "llama-3.1-8b-instruct"], ["--instance", "g6e.xlarge"]


def _configs(tmp):
    good = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
            "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048,
            "torch_dtype": "bfloat16"}
    files = {}
    for name, mutate in {
        "no_hidden": lambda c: c.pop("hidden_size"),
        "no_layers": lambda c: c.pop("num_hidden_layers"),
        "no_vocab": lambda c: c.pop("vocab_size"),
        "zero_heads": lambda c: c.update(num_attention_heads=0),
        "string_layers": lambda c: c.update(num_hidden_layers="four"),
        "kv_not_dividing": lambda c: c.update(num_key_value_heads=3),
        "bad_dtype": lambda c: c.update(torch_dtype="int7"),
        "bad_quant": lambda c: c.update(quantization_config={"quant_method": "magic"}),
        "bad_layer_types": lambda c: c.update(layer_types=["full_attention"]),
    }.items():
        cfg = dict(good)
        mutate(cfg)
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(cfg))
        files[name] = str(path)
    (tmp / "not_json.json").write_text("{ this is not json")
    files["not_json"] = str(tmp / "not_json.json")
    (tmp / "list.json").write_text("[1, 2]")
    files["list"] = str(tmp / "list.json")
    (tmp / "empty_dir").mkdir()
    files["empty_dir"] = str(tmp / "empty_dir")
    files["good"] = str(tmp / "good.json")
    (tmp / "good.json").write_text(json.dumps(good))
    return files


CASES = [
    # (id, args, text the message must contain)
    ("unknown model", ["--model", "acme/NoSuchModel-7B", *G6E], "--model acme/NoSuchModel-7B: HF_HUB_OFFLINE"),
    ("unknown model suggests config", ["--model", "gpt-17", *G6E], "config.json"),
    ("empty model", ["--model", "", *G6E], "--model"),
    ("unknown instance", [*M8, "--instance", "p9.96xlarge"], "--instance p9.96xlarge is not in the catalog"),
    ("no hardware", [*M8], "--instance"),
    ("instance and custom", [*M8, *G6E, "--gpu-memory-mib", "1000"], "--gpu-memory-mib"),
    ("custom without gpus", [*M8, "--gpu-memory-mib", "81559"], "--gpus-per-node"),
    ("custom zero memory", [*M8, "--gpu-memory-mib", "0", "--gpus-per-node", "1"], "--gpu-memory-mib"),
    ("custom negative gpus", [*M8, "--gpu-memory-mib", "1000", "--gpus-per-node", "-2"], "--gpus-per-node"),
    ("tp not dividing heads", ["--model", "qwen2.5-0.5b-instruct", "--instance", "g6.12xlarge",
                               "--tensor-parallel-size", "4"], "--tensor-parallel-size 4"),
    ("tp above node", [*M8, *G6E, "--tensor-parallel-size", "2"], "--tensor-parallel-size 2"),
    ("tp zero", [*M8, *G6E, "--tensor-parallel-size", "0"], "--tensor-parallel-size"),
    ("pp negative", [*M8, *G6E, "--pipeline-parallel-size", "-1"], "--pipeline-parallel-size"),
    ("pp above layers", [*M8, *G6E, "--pipeline-parallel-size", "64"], "--pipeline-parallel-size 64"),
    ("utilization zero", [*M8, *G6E, "--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
    ("utilization above one", [*M8, *G6E, "--gpu-memory-utilization", "1.2"],
     "--gpu-memory-utilization: Input should be less than or equal to 1"),
    ("utilization negative", [*M8, *G6E, "--gpu-memory-utilization", "-0.5"], "--gpu-memory-utilization"),
    ("max len zero", [*M8, *G6E, "--max-model-len", "0"], "--max-model-len"),
    ("max len negative", [*M8, *G6E, "--max-model-len", "-4096"], "--max-model-len"),
    ("max len above model", [*M8, *G6E, "--max-model-len", "999999999"], "max_position_embeddings"),
    ("seqs zero", [*M8, *G6E, "--max-num-seqs", "0"], "--max-num-seqs"),
    ("batched below seqs", [*M8, *G6E, "--max-num-seqs", "512", "--max-num-batched-tokens", "256"],
     "--max-num-batched-tokens"),
    ("block not power of two", [*M8, *G6E, "--block-size", "24"], "--block-size"),
    ("block zero", [*M8, *G6E, "--block-size", "0"], "--block-size"),
    ("kv memory negative", [*M8, *G6E, "--kv-cache-memory", "-1"], "--kv-cache-memory"),
    ("kv memory and utilization", [*M8, *G6E, "--kv-cache-memory", "2", "--gpu-memory-utilization", "0.8"],
     "--kv-cache-memory"),
    ("replicas and target", [*M8, *G6E, "--replicas", "2", "--target-concurrency", "10"], "--replicas"),
    ("replicas zero", [*M8, *G6E, "--replicas", "0"], "--replicas"),
    ("negative price", [*M8, *G6E, "--price-per-hour", "-3"], "--price-per-hour"),
    ("awq on 16-bit checkpoint", [*M8, *G6E, "--quantization", "awq"], "--quantization awq"),
    ("quantization conflicting with checkpoint", ["--model", "deepseek-v3", "--instance", "p5en.48xlarge",
                                                  "--quantization", "awq"], "--quantization awq"),
    ("does not fit anywhere pinned", ["--model", "llama-3.1-405b-instruct", "--instance", "g6.xlarge",
                                      "--pipeline-parallel-size", "2"], "does not fit"),
    ("load bandwidth zero", [*M8, *G6E, "--load-bandwidth-mib-s", "0"], "--load-bandwidth-mib-s"),
    ("load bandwidth beyond float range", [*M8, *G6E, "--load-bandwidth-mib-s", "1e309"], "--load-bandwidth-mib-s"),
    ("cache read rate too large", [*M8, *G6E, "--cache-read-mib-s", "1.7e302"], "--cache-read-mib-s"),
    ("staging rate too large", [*M8, *G6E, "--stage", "pvc", "--model-source-kind", "pvc", "--model-source",
                                "/models/m", "--stage-bandwidth-mib-s", "1e308"], "--stage-bandwidth-mib-s"),
]

CONFIG_CASES = [
    ("no_hidden", "hidden_size"), ("no_layers", "num_hidden_layers"), ("no_vocab", "vocab_size"),
    ("zero_heads", "num_attention_heads"), ("string_layers", "num_hidden_layers"),
    ("kv_not_dividing", "num_key_value_heads"), ("bad_dtype", "torch_dtype"), ("bad_quant", "quant_method"),
    ("bad_layer_types", "layer_types"), ("not_json", "not JSON"), ("list", "JSON object"),
    ("empty_dir", "no config.json"),
]


def _assert_one_line_error(r, must_contain):
    assert r.exit_code == 1, (r.exit_code, r.stdout, r.stderr)
    assert r.stdout == ""
    err = r.stderr.rstrip("\n")
    assert "\n" not in err, err
    assert "Traceback" not in err
    assert err.startswith("vllm-eks: error: ")
    assert must_contain in err, err


@pytest.mark.parametrize("args,must_contain", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["plan", "explain"])
def test_bad_flags(cli, command, args, must_contain):
    _assert_one_line_error(cli(command, *args), must_contain)


@pytest.mark.parametrize("name,must_contain", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_files(cli, tmp_path, name, must_contain):
    files = _configs(tmp_path)
    r = cli("plan", "--model", files[name], "--model-source", "acme/tiny-llama", *G6E)
    _assert_one_line_error(r, must_contain)
    assert files[name].split("/")[-1].split(".")[0] in r.stderr or "--model" in r.stderr


def test_good_config_file_plans(cli, tmp_path):
    files = _configs(tmp_path)
    r = cli("plan", "--model", files["good"], "--model-source", "acme/tiny-llama", *G6E, "--json")
    assert r.exit_code == 0, r.stderr


def test_usage_errors_exit_2(cli):
    assert cli("plan", *G6E).exit_code == 2                       # --model missing
    assert cli("plan", *M8, *G6E, "--dtype", "int3").exit_code == 2  # not a choice
    assert cli("no-such-command").exit_code == 2


def test_count_of_malformed_invocations():
    assert len(CASES) + len(CONFIG_CASES) >= 30


def test_real_process_prints_one_line_and_no_traceback():
    import subprocess
    import sys
    from pathlib import Path
    exe = Path(sys.executable).with_name("vllm-eks")
    r = subprocess.run([str(exe), "plan", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge",
                        "--tensor-parallel-size", "3"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("flag,value", [("--release", "My_Release"), ("--namespace", "LLM"),
                                        ("--capacity-type", "free"), ("--routing", "nginx"),
                                        ("--gateway", "My_Gateway"), ("--alb-certificate-arn", "cert-1"),
                                        ("--alb-scheme", "public"), ("--gateway-provider", "nginx"), ("--api-key-secret", "API_KEY"),
                                        ("--vpc-cidr", "10.0.0.1"), ("--vpc-cidr", "10.0.0.300/16"),
                                        ("--vpc-cidr", "10.0.0.1/16"), ("--gateway-data-plane-namespace", "Envoy_GW"),
                                        ("--kuberay-namespace", "Ray"), ("--prometheus-namespace", "")])
def test_values_flags_are_checked(cli, tmp_path, flag, value):
    r = cli("values", *M8, *G6E, "--out", str(tmp_path / "out"), flag, value)
    assert r.exit_code in (1, 2), r.stdout
    assert flag in r.stderr or flag.lstrip("-") in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra", [[], ["--capacity-type", "on-demand"]], ids=["reserved only", "with on-demand"])
def test_reserved_capacity_without_a_reservation_id_is_refused(cli, tmp_path, extra):
    """--capacity-type reserved selects no reservation by itself: gpu-infra would refuse the values."""
    r = cli("values", *M8, *G6E, "--out", str(tmp_path / "out"), "--capacity-type", "reserved", *extra)
    _assert_one_line_error(r, "--capacity-reservation-id")
    assert "--capacity-type reserved" in r.stderr
    assert not (tmp_path / "out").exists()


def test_reserved_capacity_with_a_reservation_id_writes_values(cli, tmp_path):
    r = cli("values", *M8, *G6E, "--out", str(tmp_path / "out"), "--capacity-type", "reserved",
            "--capacity-reservation-id", "cr-0123456789abcdef0")
    assert r.exit_code == 0, r.stderr
    assert "cr-0123456789abcdef0" in (tmp_path / "out" / "gpu-infra.yaml").read_text()


ALB_ARGS = ["--routing", "alb", "--alb-certificate-arn", "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d"]


@pytest.mark.parametrize("args,must_contain", [
    (ALB_ARGS, "--routing alb needs --vpc-cidr"),
    (["--vpc-cidr", "10.0.0.0/16"], "--vpc-cidr is only read with --routing alb"),
    (["--gateway-data-plane-namespace", "envoy-gateway-system"], "--gateway-data-plane-namespace is only read"),
    ([*ALB_ARGS, "--vpc-cidr", "10.0.0.0/33"], "--vpc-cidr"),
], ids=["alb-without-vpc-cidr", "vpc-cidr-without-alb", "data-plane-without-gateway", "prefix-too-long"])
def test_network_policy_flags_are_refused_in_one_line(cli, tmp_path, args, must_contain):
    r = cli("values", *M8, *G6E, "--out", str(tmp_path / "out"), *args)
    _assert_one_line_error(r, must_contain)
    assert not (tmp_path / "out").exists()


def test_alb_with_vpc_cidr_or_without_the_policy_writes_values(cli, tmp_path):
    for i, extra in enumerate((["--vpc-cidr", "10.0.0.0/16", "--vpc-cidr", "fd00:10::/56"], ["--no-network-policy"])):
        r = cli("values", *M8, *G6E, "--out", str(tmp_path / f"out{i}"), *ALB_ARGS, *extra)
        assert r.exit_code == 0, r.stderr

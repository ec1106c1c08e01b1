"""Property tests of the CLI's input handling: for any value of any flag, and for config.json
files mutated field by field, `vllm-eks` either exits 0 with valid output or exits 1 with one
line that names the flag or field. Never a traceback, a NaN, or a negative size in a message."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_eks.cli.main import plan

M8_ARGS = ["--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge"]
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Text the flags may receive: numbers of every shape, words, and the odd bytes users paste.
NUMBERISH = st.one_of(
    st.integers(min_value=-10**20, max_value=10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e309", "0", "-0", "0.0", "1e-320", "", " ", "2Gi", "1,5", "0x10"]),
)
TEXTISH = st.one_of(NUMBERISH, st.text(max_size=40), st.just("x" * 5000), st.just("../" * 50 + "config.json"))


def _fuzzable_flags() -> list[click.Option]:
    """Every `plan` flag that takes a value, except --model and --instance (fuzzed apart)."""
    return [p for p in plan.params if isinstance(p, click.Option) and not p.is_flag
            and p.name not in ("model", "instance")]


def assert_clean(result, args: list[str]) -> None:
    """Exit 0 with JSON that holds no NaN, or exit 1/2 with one line naming what was wrong."""
    shown = " ".join(args)[:300]
    assert result.exit_code in (0, 1, 2), (shown, result.exit_code, result.stderr[-500:])
    assert "Traceback" not in result.stderr + result.stdout, shown
    if result.exit_code == 0:
        if "--json" in args:
            json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{shown}: {c} in --json output"))
        return
    err = result.stderr.rstrip("\n")
    if result.exit_code == 2:  # click's usage errors: they name the option themselves
        assert "Error:" in err, (shown, err)
        return
    assert "\n" not in err and err.startswith("vllm-eks: error: "), (shown, err)
    assert re.search(r"--[a-z]|config\.json|field '|quantization_config|--model", err), (shown, err)
    # NaN or infinity computed into a message; the user's own input quoted back is fine
    computed = re.sub(r"'[^']*'", "", err.split(" (got ")[0])
    assert not re.search(r"\bnan\b|\binf\b", computed, re.I), (shown, err)
    assert not re.search(r"-\d+(\.\d+)? GiB", err), (shown, err)


@pytest.mark.parametrize("flag", [max(p.opts, key=len) for p in _fuzzable_flags()])
@FUZZ
@given(value=TEXTISH)
def test_any_value_of_a_plan_flag(cli, flag, value):
    args = ["plan", *M8_ARGS, flag, value, "--json"]
    assert_clean(cli(*args), args)


@FUZZ
@given(values=st.fixed_dictionaries({
    "--tensor-parallel-size": st.integers(-2, 9).map(str),
    "--pipeline-parallel-size": st.integers(-1, 20).map(str),
    "--max-model-len": st.integers(-1, 300_000).map(str),
    "--kv-cache-memory": st.floats(-1, 200, allow_nan=False).map(lambda x: f"{x:.3f}"),
    "--max-nodes-per-replica": st.integers(0, 4).map(str),
}), model=st.sampled_from(["llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "deepseek-v3"]),
   instance=st.sampled_from(["g6e.xlarge", "g5.12xlarge", "p5.48xlarge"]),
   chosen=st.sets(st.sampled_from(["--tensor-parallel-size", "--pipeline-parallel-size", "--max-model-len",
                                   "--kv-cache-memory", "--max-nodes-per-replica"])))
def test_combinations_of_pins(cli, values, model, instance, chosen):
    args = ["plan", "--model", model, "--instance", instance, "--json"]
    for flag in sorted(chosen):
        args += [flag, values[flag]]
    r = cli(*args)
    assert_clean(r, args)
    if r.exit_code == 0:
        p = json.loads(r.stdout)
        if "--max-nodes-per-replica" in chosen:
            assert p["pipeline_parallel_size"] <= int(values["--max-nodes-per-replica"]), args
        if "--kv-cache-memory" in chosen:
            # a pin that plans sits beside the weights on its GPU
            used = (p["weights_bytes_per_gpu"] + p["activation_peak_bytes"] + p["non_torch_bytes"]
                    + p["cudagraph_bytes"] + float(values["--kv-cache-memory"]) * 2**30)
            assert used <= p["gpu_memory_bytes"] * 1.001, args


GOOD_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
               "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
               "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048,
               "torch_dtype": "bfloat16"}
# Fields the parser reads beyond the required ones, so mutations reach every branch.
OPTIONAL_FIELDS = {"sliding_window": 128, "use_sliding_window": True, "sliding_window_pattern": 2,
                   "tie_word_embeddings": False, "attention_bias": False, "head_dim": 64,
                   "num_local_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 256,
                   "first_k_dense_replace": 1, "n_shared_experts": 1,
                   "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
                   "layer_types": ["sliding_attention", "full_attention"] * 2,
                   "text_config": {"hidden_size": 256}, "vision_config": {"hidden_size": 64, "num_hidden_layers": 2}}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


@FUZZ
@given(extra=st.dictionaries(st.sampled_from(sorted(OPTIONAL_FIELDS)), st.just(None), max_size=4),
       mutated=st.dictionaries(st.sampled_from(sorted({**GOOD_CONFIG, **OPTIONAL_FIELDS})), JSON_VALUES,
                               min_size=1, max_size=3),
       dropped=st.sets(st.sampled_from(sorted(GOOD_CONFIG)), max_size=2))
def test_mutated_config_json(cli, tmp_path_factory, extra, mutated, dropped):
    cfg = dict(GOOD_CONFIG)
    cfg.update({k: OPTIONAL_FIELDS[k] for k in extra})
    cfg.update(mutated)
    for k in dropped:
        cfg.pop(k, None)
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(cfg))
    args = ["plan", "--model", str(path), "--model-source", "acme/tiny", "--instance", "g6e.xlarge", "--json"]
    assert_clean(cli(*args), args)


# A small Llama 4 (text_config inside a multimodal wrapper) with every field its parsing reads,
# and the fields that make the parser refuse an architecture it does not size.
LLAMA4_TEXT = {"model_type": "llama4_text", "hidden_size": 512, "intermediate_size": 256,
               "intermediate_size_mlp": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
               "num_key_value_heads": 2, "head_dim": 64, "num_local_experts": 4, "num_experts_per_tok": 1,
               "interleave_moe_layer_step": 2, "attention_chunk_size": 256, "no_rope_layers": [1, 1, 1, 0],
               "no_rope_layer_interval": 4, "vocab_size": 1000, "max_position_embeddings": 4096,
               "torch_dtype": "bfloat16"}
REFUSING_FIELDS = {"layer_types": ["linear_attention"] * 4, "hybrid_override_pattern": "M-M*",
                   "attn_layer_period": 8, "full_attention_interval": 4, "mamba_d_state": 16,
                   "index_topk": 2048, "model_type": "nemotron_h"}


@FUZZ
@given(mutated=st.dictionaries(st.sampled_from(sorted({**LLAMA4_TEXT, **REFUSING_FIELDS})), JSON_VALUES,
                               min_size=1, max_size=3),
       refusing=st.dictionaries(st.sampled_from(sorted(REFUSING_FIELDS)), st.just(None), max_size=1))
def test_mutated_llama4_config_json(cli, tmp_path_factory, mutated, refusing):
    text = {**LLAMA4_TEXT, **{k: REFUSING_FIELDS[k] for k in refusing}, **mutated}
    cfg = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "text_config": text}
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(cfg))
    args = ["plan", "--model", str(path), "--model-source", "acme/tiny", "--instance", "g6e.xlarge", "--json"]
    r = cli(*args)
    assert_clean(r, args)
    if refusing and not set(refusing) & set(mutated):
        assert r.exit_code == 1 and "field '" in r.stderr, (args, r.stderr)


def test_the_checks_can_fail():
    """assert_clean rejects what it is meant to reject (a traceback, two lines, NaN, -GiB)."""
    class R:
        def __init__(self, code, out="", err=""):
            self.exit_code, self.stdout, self.stderr = code, out, err
    bad = [R(1, err="Traceback (most recent call last):\n"), R(1, err="vllm-eks: error: a\nb\n"),
           R(0, out='{"x": NaN}'), R(1, err="vllm-eks: error: --x short by -3.5 GiB\n"),
           R(1, err="vllm-eks: error: --x must be finite, got nan\n"), R(3)]
    for r in bad:
        with pytest.raises((AssertionError, pytest.fail.Exception)):
            assert_clean(r, ["plan", "--json"])
    assert_clean(R(1, err="vllm-eks: error: --x: Input should be a finite number (got nan)\n"), ["plan"])


def test_deeply_nested_config_json(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    args = ["plan", "--model", str(path), "--model-source", "acme/tiny", "--instance", "g6e.xlarge"]
    r = cli(*args)
    assert_clean(r, args)
    assert r.exit_code == 1 and "nested too deeply" in r.stderr


# `values` flags of the routing choice: any text either writes the folder or is refused in one line
# naming a flag, and a refusal writes nothing.
# flag -> the other flags that make it count
CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d"
VPC = ["--vpc-cidr", "10.0.0.0/16"]
ROUTING_FLAGS = {"--routing": ["--gateway", "gw", "--alb-certificate-arn", CERT, *VPC],
                 "--gateway": ["--routing", "gateway"], "--alb-certificate-arn": ["--routing", "alb", *VPC],
                 "--alb-scheme": ["--routing", "alb", "--alb-certificate-arn", CERT, *VPC], "--api-key-secret": [],
                 "--vpc-cidr": ["--routing", "alb", "--alb-certificate-arn", CERT],
                 "--gateway-data-plane-namespace": ["--routing", "gateway", "--gateway", "gw"],
                 "--gateway-provider": ["--routing", "gateway", "--gateway", "gw"]}


@pytest.mark.parametrize("flag", sorted(ROUTING_FLAGS))
@settings(FUZZ, max_examples=20)
@given(value=TEXTISH)
def test_any_value_of_a_routing_flag(cli, tmp_path_factory, flag, value):
    out = tmp_path_factory.mktemp("routing") / "out"
    args = ["values", *M8_ARGS, "--out", str(out), *ROUTING_FLAGS[flag], flag, value]
    r = cli(*args)
    assert_clean(r, args)
    if r.exit_code != 0:
        assert not out.exists(), args


def test_out_cannot_be_written(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for out in (str(blocker), str(blocker / "sub")):
        args = ["values", *M8_ARGS, "--out", out]
        r = cli(*args)
        assert_clean(r, args)
        assert r.exit_code == 1 and "--out" in r.stderr, r.stderr
    assert blocker.read_text() == "not a folder"


def test_local_config_json_needs_a_weights_source(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GOOD_CONFIG))
    r = cli("plan", "--model", str(path), "--instance", "g6e.xlarge")
    assert r.exit_code == 1 and "--model-source" in r.stderr, r.stderr
    r = cli("plan", "--model", str(path), "--model-source", "s3://bucket/tiny", "--instance", "g6e.xlarge")
    assert r.exit_code == 0, r.stderr


def test_custom_hardware_needs_an_instance_type(cli):
    base = ["plan", "--model", "llama-3.1-8b-instruct", "--gpu-memory-mib", "81559", "--gpus-per-node", "1"]
    r = cli(*base)
    assert r.exit_code == 1 and "--hardware-name" in r.stderr
    r = cli(*base, "--hardware-name", "lab box")
    assert r.exit_code == 1 and "--hardware-name" in r.stderr
    assert cli(*base, "--hardware-name", "p6-b200.48xlarge").exit_code == 0


def test_missing_config_path_is_not_called_a_catalog_miss(cli, tmp_path):
    r = cli("plan", "--model", str(tmp_path / "nope" / "config.json"), "--instance", "g6e.xlarge")
    assert r.exit_code == 1 and "no such file" in r.stderr and "catalog" not in r.stderr, r.stderr


@pytest.mark.parametrize("field,value,named", [
    ("sliding_window", -1, "sliding_window"), ("tie_word_embeddings", "false", "tie_word_embeddings"),
    ("num_experts_per_tok", 9, "num_experts_per_tok"), ("quantization_config", {"quant_method": "awq", "bits": 0}, "bits"),
    ("attention_bias", "yes", "attention_bias"), ("use_sliding_window", "false", "use_sliding_window"),
])
def test_config_values_that_would_change_results_silently(cli, tmp_path, field, value, named):
    cfg = {**GOOD_CONFIG, "sliding_window": 128, "num_local_experts": 8, "num_experts_per_tok": 2,
           "moe_intermediate_size": 256}
    cfg[field] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = cli("plan", "--model", str(path), "--model-source", "acme/tiny", "--instance", "g6e.xlarge")
    assert r.exit_code == 1 and named in r.stderr, r.stderr


def test_kv_pin_that_cannot_hold(cli):
    r = cli("plan", *M8_ARGS, "--kv-cache-memory", "500")
    assert r.exit_code == 1 and "--kv-cache-memory" in r.stderr
    # beside the 8B weights (~15 GiB) on a 44.5 GiB GPU, 40 GiB does not fit
    r = cli("plan", *M8_ARGS, "--kv-cache-memory", "40")
    assert r.exit_code == 1 and "does not fit beside the weights" in r.stderr, r.stderr
    # a pin too small for one request is refused instead of growing the layout to 16 machines
    r = cli("plan", "--model", "llama-3.1-70b-instruct", "--instance", "g6e.xlarge", "--kv-cache-memory", "0.01")
    assert r.exit_code == 1 and "--kv-cache-memory" in r.stderr and "pin at least" in r.stderr, r.stderr


def test_max_nodes_per_replica_forbids_multi_node(cli):
    ok = cli("plan", "--model", "llama-3.1-70b-instruct", "--instance", "g6e.xlarge", "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["pipeline_parallel_size"] > 1
    assert "max-nodes-per-replica" in json.dumps(json.loads(ok.stdout)["derivations"])
    r = cli("plan", "--model", "llama-3.1-70b-instruct", "--instance", "g6e.xlarge", "--max-nodes-per-replica", "1")
    assert r.exit_code == 1 and "--max-nodes-per-replica" in r.stderr, r.stderr


def test_values_writes_all_files_or_none(cli, tmp_path):
    out = tmp_path / "scenario"
    # fails after planning, while building the values (EFA needs --zone): nothing written
    r = cli("values", "--model", "llama-3.1-405b-instruct", "--instance", "p5.48xlarge", "--out", str(out))
    assert r.exit_code == 1 and "--zone" in r.stderr
    assert not out.exists() or not any(out.iterdir())
    assert cli("values", *M8_ARGS, "--out", str(out)).exit_code == 0
    before = {p.name: p.read_text() for p in out.iterdir()}
    r = cli("values", "--model", "llama-3.1-405b-instruct", "--instance", "p5.48xlarge", "--out", str(out))
    assert r.exit_code == 1
    assert {p.name: p.read_text() for p in out.iterdir()} == before, "a failed run changed the folder"
    # a rerun replaces its own files
    assert cli("values", *M8_ARGS, "--release", "other", "--out", str(out)).exit_code == 0


def test_values_refuses_an_empty_out_and_foreign_files(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("README.md").write_text("my project\n")
    r = cli("values", *M8_ARGS, "--out", "")
    assert r.exit_code == 1 and "--out" in r.stderr
    r = cli("values", *M8_ARGS, "--out", ".")
    assert r.exit_code == 1 and "README.md" in r.stderr
    assert Path("README.md").read_text() == "my project\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]


@pytest.mark.parametrize("topology", ["ray-serve", "disaggregated"])
def test_plan_refuses_what_values_cannot_write(cli, tmp_path, topology):
    """A Ray topology runs one engine per worker pod: a model that needs pipeline stages across
    nodes is refused by `plan` as by `values`, with the flag named."""
    args = ["--model", "llama-3.1-405b-instruct", "--instance", "p5.48xlarge", "--topology", topology]
    for command in (["plan"], ["values", "--zone", "us-east-1a", "--out", str(tmp_path / "out")]):
        r = cli(*command, *args)
        assert r.exit_code == 1 and f"--topology {topology}" in r.stderr, (command, r.stderr)


# The hybrids sized (generator/vllm_eks/model/hybrid.py), from the catalog, every field they read
# open to mutation: a bad value is refused in one line naming the field, never a traceback.
def _hybrid_configs() -> dict[str, dict]:
    from vllm_eks.catalog.models import model_catalog
    return {m: model_catalog()[m].config for m in ("qwen3-next-80b-a3b-instruct", "granite-4.0-h-tiny")}


HYBRID_FIELDS = sorted({k for cfg in _hybrid_configs().values() for k in cfg}
                       | {"attn_output_gate", "mamba_conv_bias", "mamba_proj_bias"})


@FUZZ
@given(which=st.sampled_from(sorted(_hybrid_configs())),
       mutated=st.dictionaries(st.sampled_from(HYBRID_FIELDS), JSON_VALUES, min_size=1, max_size=2))
def test_mutated_hybrid_config_json(cli, tmp_path_factory, which, mutated):
    cfg = {**_hybrid_configs()[which], **mutated}
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(cfg))
    args = ["plan", "--model", str(path), "--model-source", "acme/tiny", "--instance", "p5.48xlarge", "--json"]
    assert_clean(cli(*args), args)

"""Inputs that used to end in a traceback or a silently wrong figure: rates below one byte per
second, integers and non-finite numbers no float holds in config.json, bench result files and
plan files, files that are not UTF-8, an unterminated quote in --vllm, an --out name the file
system refuses, non-finite bench analyze options and a sweep that measured only failures. Each
is one line naming the flag, file or key and what is valid, or a correct output."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.bench_synthetic import result_dict, write_sweep
from tests.unit.cli_result import one_line_error

M8 = ["--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge"]
QWEN = ["--model", "qwen2.5-0.5b-instruct", "--instance", "g6.xlarge"]
FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
S3 = ["--stage", "s3://my-bucket/llama", "--model-source", "s3://my-bucket/llama"]
RATE_FLAGS = [("--load-bandwidth-mib-s", []), ("--cache-read-mib-s", []), ("--stage-bandwidth-mib-s", S3)]
ONE_BYTE_MIB = 1 / 1024**2


def _no_nan_json(text: str):
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))


# --- rates below one byte per second ------------------------------------------------------------

@pytest.mark.parametrize("flag,extra", RATE_FLAGS)
@pytest.mark.parametrize("value", ["1e-12", "5e-324", "9e-07", "1e-300"])
def test_a_rate_below_one_byte_per_second_is_refused(cli, flag, extra, value):
    for command in ("plan", "explain"):
        one_line_error(cli(command, *M8, *extra, flag, value), flag, "below one byte per second", "valid: at least")


@pytest.mark.parametrize("flag,extra", RATE_FLAGS)
def test_the_lowest_rate_accepted_is_planned_with_finite_budgets(cli, flag, extra):
    # one byte per second reads the checkpoint in centuries: refused, naming the lowest rate accepted
    # (planning/rate_bounds.py); that rate plans, with finite budgets
    err = one_line_error(cli("plan", *M8, *extra, flag, repr(ONE_BYTE_MIB)), flag, "years", "at least")
    least = float(re.search(r"at least ([0-9.e+-]+) MiB/s", err).group(1)) * 1.01
    r = cli("plan", *M8, *extra, flag, repr(least), "--json")
    assert r.exit_code == 0, r.stderr
    plan = _no_nan_json(r.stdout)
    if flag == "--cache-read-mib-s":
        assert plan["cache_read_bytes_per_s"] == int(least * 2**20)  # not the 1000 MiB/s default in its place
    if flag == "--load-bandwidth-mib-s":
        assert plan["load_bandwidth_bytes_per_s"] == int(least * 2**20)


@pytest.mark.parametrize("flag,extra", RATE_FLAGS)
@FUZZ
@given(value=st.floats(min_value=0, max_value=ONE_BYTE_MIB, exclude_min=True, exclude_max=True))
def test_any_rate_below_one_byte_per_second_is_one_line(cli, flag, extra, value):
    one_line_error(cli("plan", *M8, *extra, flag, repr(value)), flag)


# --- config.json: integers no float holds, non-UTF-8 --------------------------------------------

GOOD_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
               "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
               "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 2048,
               "torch_dtype": "bfloat16"}
LOCAL = ["--instance", "g6e.xlarge", "--model-source", "s3://my-bucket/tiny"]


def _config(tmp_path: Path, **changes) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GOOD_CONFIG, **changes}))
    return str(path)


def test_the_good_config_plans(cli, tmp_path):
    assert cli("plan", "--model", _config(tmp_path), *LOCAL).exit_code == 0


@pytest.mark.parametrize("key", ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                 "num_key_value_heads", "vocab_size", "max_position_embeddings"])
@pytest.mark.parametrize("value", [10**400, -(10**400), 10**17, 2**53 + 1])
def test_an_integer_beyond_float_range_in_config_json_names_the_key(cli, tmp_path, key, value):
    err = one_line_error(cli("plan", "--model", _config(tmp_path, **{key: value}), *LOCAL), "config.json",
                         f"key '{key}'", "out of range", "valid: at most 2**53")
    assert str(abs(value)) not in err  # the digits are counted, not printed


@pytest.mark.parametrize("changes,where", [
    ({"rope_scaling": {"rope_type": "linear", "factor": 10**400}}, "rope_scaling.factor"),
    ({"text_config": {"hidden_size": 10**309}}, "text_config.hidden_size"),
    ({"layer_types": ["full_attention"] * 3 + [10**400]}, "layer_types[3]"),
])
def test_a_nested_huge_integer_names_its_path(cli, tmp_path, changes, where):
    one_line_error(cli("plan", "--model", _config(tmp_path, **changes), *LOCAL), f"key '{where}'")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_infinity_in_config_json_is_refused(cli, tmp_path, constant):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GOOD_CONFIG, "rms_norm_eps": "@"}).replace('"@"', constant))
    one_line_error(cli("plan", "--model", str(path), *LOCAL), str(path), constant, "not a JSON number")


@pytest.mark.parametrize("bad", [b"\xe9", b"\xff\xfe", b"\xc3"])
@pytest.mark.parametrize("as_folder", [False, True])
def test_a_config_json_that_is_not_utf8_is_one_line(cli, tmp_path, bad, as_folder):
    text = json.dumps({**GOOD_CONFIG, "model_type": "@"}).encode().replace(b"@", b"ll" + bad + b"ma")
    (tmp_path / "config.json").write_bytes(text)
    where = tmp_path if as_folder else tmp_path / "config.json"
    one_line_error(cli("plan", "--model", str(where), *LOCAL), "config.json", "not UTF-8", f"0x{bad[0]:02x}")


# --- bench result files ---------------------------------------------------------------------------

ROWS = [(1, 100.0), (2, 180.0), (4, 200.0, 300.0, 40.0)]


def _sweep_with(tmp_path: Path, key: str, raw: str) -> tuple[Path, str]:
    """A three-level sweep whose second file has `key` set to the JSON text `raw`."""
    folder = tmp_path / "sweep"
    files = write_sweep(folder, ROWS)
    doc = json.loads(Path(files[1]).read_text())
    doc[key] = "@@"
    Path(files[1]).write_text(json.dumps(doc).replace('"@@"', raw))
    return folder, files[1]


NUMERIC_KEYS = ["max_concurrency", "completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
                "request_throughput", "output_throughput", "total_token_throughput", "median_ttft_ms",
                "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "mean_ttft_ms", "num_prompts", "request_rate"]


@pytest.mark.parametrize("key", NUMERIC_KEYS)
@pytest.mark.parametrize("raw", [str(10**400), str(-(10**400)), "Infinity", "-Infinity", "NaN"])
def test_a_result_number_no_float_holds_names_file_and_key(cli, tmp_path, key, raw):
    folder, bad = _sweep_with(tmp_path, key, raw)
    for args in (["--json"], [], ["--json", "--price-per-hour", "5"]):
        err = one_line_error(cli("bench", "analyze", str(folder), *args), bad)
        assert f"key '{key}'" in err or raw.lstrip("-") in err, err


def test_a_result_file_that_is_not_utf8_is_one_line(cli, tmp_path):
    folder, bad = _sweep_with(tmp_path, "model_id", '"synthetic/model"')
    Path(bad).write_bytes(Path(bad).read_bytes().replace(b"synthetic/model", b"synth\xe9tic"))
    one_line_error(cli("bench", "analyze", str(folder), "--json"), bad, "not UTF-8")
    one_line_error(cli("plan", *M8, "--from-benchmark", str(folder)), "--from-benchmark", bad, "not UTF-8")


FIGURE = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e308, max_value=1e308),
    st.sampled_from([0.0, 5e-324, 1e-320, 1e-300, 1e300, 1.7976931348623157e308]),
    st.integers(min_value=-(10**30), max_value=10**30),
)


@FUZZ
@given(key=st.sampled_from(NUMERIC_KEYS), value=FIGURE, price=st.sampled_from([None, "5", "1e6"]))
def test_any_figure_in_a_result_file_gives_json_or_one_line(cli, tmp_path_factory, key, value, price):
    folder, bad = _sweep_with(tmp_path_factory.mktemp("b"), key, json.dumps(value))
    args = ["bench", "analyze", str(folder), "--json", "--slo-ttft-p99", "1", "--slo-tpot-p99", "0.1"]
    r = cli(*args, *(["--price-per-hour", price] if price else []))
    if r.exit_code == 0:
        _no_nan_json(r.stdout)
    else:
        one_line_error(r, bad)


@pytest.mark.parametrize("rows", [
    [(1, 1e-300), (2, 2e-300), (4, 5e-324)],                        # throughput near zero: costs overflow
    [(1, 100.0, 1e-320, 1e-320), (2, 180.0, 1e-300, 1e-300), (4, 190.0, 1e300, 1e300)],  # latency ratios
])
def test_denormal_figures_give_finite_json(cli, tmp_path, rows):
    write_sweep(tmp_path / "s", rows)
    r = cli("bench", "analyze", str(tmp_path / "s"), "--json", "--price-per-hour", "5",
            "--slo-ttft-p99", "1", "--slo-tpot-p99", "1")
    assert r.exit_code == 0, r.stderr
    doc = _no_nan_json(r.stdout)
    for cost in doc["costs"]:
        assert cost["usd_per_million_output_tokens"] is None or math.isfinite(cost["usd_per_million_output_tokens"])


@pytest.mark.parametrize("flag,value", [
    ("--price-per-hour", "inf"), ("--price-per-hour", "nan"), ("--price-per-hour", "1e308"),
    ("--slo-ttft-p99", "inf"), ("--slo-tpot-p99", "nan"), ("--slo-ttft-p99", "1e300"),
    ("--knee-min-gain", "nan"), ("--knee-latency-growth", "inf"), ("--knee-min-gain", "1e300"),
])
def test_a_non_finite_analyze_option_names_the_flag(cli, tmp_path, flag, value):
    write_sweep(tmp_path / "s", ROWS)
    slo = [] if "slo" in flag else ["--slo-ttft-p99", "1", "--slo-tpot-p99", "1"]
    if flag == "--slo-ttft-p99":
        slo = ["--slo-tpot-p99", "1"]
    elif flag == "--slo-tpot-p99":
        slo = ["--slo-ttft-p99", "1"]
    err = one_line_error(cli("bench", "analyze", str(tmp_path / "s"), "--json", *slo, flag, value), flag,
                         "finite number")
    assert "--usd-per-hour" not in err and "--min-gain-pct" not in err


# --- plan files -----------------------------------------------------------------------------------

@pytest.fixture
def scenario(cli, tmp_path) -> Path:
    out = tmp_path / "scenario"
    r = cli("values", *M8, "--out", str(out))
    assert r.exit_code == 0, r.stderr
    return out


@pytest.mark.parametrize("damage", ["latin1", "huge", "nan"])
def test_a_damaged_plan_json_is_one_line_for_check_fit_and_analyze(cli, tmp_path, scenario, damage):
    plan = scenario / "plan.json"
    text = plan.read_bytes()
    if damage == "latin1":
        plan.write_bytes(text.replace(b'"model"', b'"m\xf6del"', 1))
        needle = "not UTF-8"
    elif damage == "huge":
        plan.write_bytes(text.replace(b'"replicas": 1', b'"replicas": ' + str(10**400).encode(), 1))
        needle = "key 'replicas'"
    else:
        plan.write_bytes(text.replace(b'"replicas": 1', b'"replicas": NaN', 1))
        needle = "NaN"
    one_line_error(cli("check-fit", str(scenario)), str(plan), needle)
    write_sweep(tmp_path / "s", ROWS)
    one_line_error(cli("bench", "analyze", str(tmp_path / "s"), "--plan", str(plan)), "--plan", needle)


# --- --vllm, --out ----------------------------------------------------------------------------------

@pytest.mark.parametrize("vllm", ["'unterminated", '"/usr/bin/vllm', "python -m vllm\\", "a 'b c"])
def test_a_vllm_prefix_that_does_not_split_is_one_line(cli, tmp_path, vllm):
    one_line_error(cli("bench", "run", "--url", "http://127.0.0.1:9", "--model", "m", "--out", str(tmp_path / "r"),
                       "--vllm", vllm), "--vllm", "cannot split it like a shell")


@pytest.mark.parametrize("shape", ["component", "nested", "deep"])
def test_an_out_name_the_file_system_refuses_is_one_line(cli, tmp_path, shape):
    long = "x" * 300
    out = {"component": tmp_path / long, "nested": tmp_path / long / "scenario",
           "deep": tmp_path / "a" / long / "b" / long}[shape]
    err = one_line_error(cli("values", *M8, "--out", str(out)), "--out", "File name too long")
    assert len(err) < 400
    one_line_error(cli("bench", "run", "--url", "http://127.0.0.1:9", "--model", "m", "--out", str(out),
                       "--vllm", "/bin/true"), "--out")


# --- --from-benchmark with a sweep of failures ------------------------------------------------------

def _failing_sweep(folder: Path, out_tps: float, failed_of_1000: int) -> Path:
    folder.mkdir(parents=True)
    for c in (1, 2, 4, 8):
        completed = 1000 - failed_of_1000
        doc = result_dict(c, out_tps * c, completed=completed)
        doc.update(failed=failed_of_1000, model_id=None)
        if out_tps == 0:
            doc.update(total_output_tokens=0, request_throughput=0.0)
        (folder / f"concurrency-{c:04d}.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("out_tps,failed,needle", [
    (0.0, 999, "no output tokens"), (0.0, 0, "no output tokens"),
    (50.0, 999, "999 of 1000 requests failed"), (50.0, 200, "200 of 1000 requests failed"),
])
def test_a_sweep_of_failures_is_refused_by_name(cli, tmp_path, out_tps, failed, needle):
    folder = _failing_sweep(tmp_path / "sweep", out_tps, failed)
    for command in ("plan", "explain"):
        one_line_error(cli(command, *QWEN, "--from-benchmark", str(folder)), "--from-benchmark",
                       str(folder / "concurrency-"), needle)
    out = tmp_path / "out"
    one_line_error(cli("values", *QWEN, "--from-benchmark", str(folder), "--out", str(out)), needle)
    assert not out.exists()


def test_a_sweep_with_few_failures_still_sets_max_num_seqs(cli, tmp_path):
    folder = _failing_sweep(tmp_path / "sweep", 50.0, 20)
    r = cli("plan", *QWEN, "--from-benchmark", str(folder), "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["measured"]["max_num_seqs"] >= 1

"""Loading `vllm bench serve --save-result` files: the real shape, and bad input named by file and key."""

import json

import pytest

from tests.unit.bench_synthetic import CPU_SWEEP, result_dict, write_sweep
from vllm_eks.bench.results import REQUIRED_KEYS, load_result, load_sweep
from vllm_eks.core.errors import BenchmarkResultError


def test_fixture_sweep_loads_sorted_by_concurrency():
    sweep = load_sweep([str(CPU_SWEEP)])
    assert [r.concurrency for r in sweep] == [1, 2, 4, 8, 16, 32]
    at8 = sweep[3]
    # seed 004 Figure 6: median TTFT 886 ms, p99 TTFT 1,017 ms, median TPOT 122.9 ms, p99 132.9 ms at 8
    assert (at8.median_ttft_ms, at8.p99_ttft_ms, at8.median_tpot_ms, at8.p99_tpot_ms) == (886.0, 1017.0, 122.9, 132.9)
    assert at8.mean_input_tokens == 256 and at8.mean_output_tokens == 128
    assert at8.model_id == "Qwen/Qwen2.5-0.5B-Instruct"


def test_files_and_folders_mix(tmp_path):
    files = write_sweep(tmp_path / "a", [(1, 10.0), (2, 19.0)])
    write_sweep(tmp_path / "b", [(4, 30.0)])
    assert [r.concurrency for r in load_sweep([*files, str(tmp_path / "b")])] == [1, 2, 4]


@pytest.mark.parametrize("key", sorted(REQUIRED_KEYS))
def test_missing_key_names_file_and_key(tmp_path, key):
    d = result_dict(4, 100.0)
    del d[key]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(d))
    with pytest.raises(BenchmarkResultError, match=rf"{p}: missing key '{key}'"):
        load_result(p)


@pytest.mark.parametrize("text, match", [
    ("{ not json", r"not JSON \(.* at line 1 column 3\)"),
    ("[1, 2]", "expected one JSON object"),
    (json.dumps({**result_dict(4, 1.0), "max_concurrency": None}), "'max_concurrency' is null .*--max-concurrency"),
    (json.dumps({**result_dict(4, 1.0), "completed": 0}), "key 'completed': Input should be greater than 0"),
    (json.dumps({**result_dict(4, 1.0), "p99_ttft_ms": "fast"}), "key 'p99_ttft_ms'"),
])
def test_bad_content(tmp_path, text, match):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(BenchmarkResultError, match=rf"{p}: .*{match}"):
        load_result(p)


def test_sweep_errors(tmp_path):
    with pytest.raises(BenchmarkResultError, match="no result files given"):
        load_sweep([])
    with pytest.raises(BenchmarkResultError, match="nope.json: no such file"):
        load_sweep([str(tmp_path / "nope.json")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(BenchmarkResultError, match="empty: folder holds no"):
        load_sweep([str(tmp_path / "empty")])
    one = write_sweep(tmp_path / "one", [(8, 50.0)])
    with pytest.raises(BenchmarkResultError, match=r"at least 2 concurrency levels.*got 1 \(.*concurrency-0008.json"):
        load_sweep(one)
    twice = write_sweep(tmp_path / "x", [(8, 50.0)]) + write_sweep(tmp_path / "y", [(8, 51.0)])
    with pytest.raises(BenchmarkResultError, match="max_concurrency 8 is also the level of"):
        load_sweep(twice)


def test_sweep_notes(tmp_path):
    from vllm_eks.bench.results import sweep_notes

    assert sweep_notes(load_sweep([str(CPU_SWEEP)])) == []
    rows = [result_dict(1, 10.0), {**result_dict(2, 19.0), "failed": 3, "request_rate": 4.0, "model_id": "other"},
            {**result_dict(4, 30.0, output_len=64)}, result_dict(200, 40.0)]
    for i, d in enumerate(rows):
        (tmp_path / f"{i}.json").write_text(json.dumps(d))
    notes = sweep_notes(load_sweep([str(tmp_path)]))
    assert notes[0].startswith("failed requests at concurrency 2 (3 of 103)")
    assert "finite --request-rate at concurrency 2" in notes[1]
    assert notes[2] == "fewer requests than the concurrency at 200 (100 requests): the level never ran full"
    assert notes[3] == "results of different models: other, synthetic/model"
    assert "256/64, 256/128" in notes[4]

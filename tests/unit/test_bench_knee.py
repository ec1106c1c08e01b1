"""The knee and the SLO limit on sweeps whose answers are known."""

import pytest

from tests.unit.bench_synthetic import CPU_SWEEP, write_sweep
from vllm_eks.bench.knee import KneeCriteria, find_knee, slo_limit, steps
from vllm_eks.bench.results import load_sweep
from vllm_eks.core.errors import InvalidOptionError


def _sweep(tmp_path, rows):
    return load_sweep(write_sweep(tmp_path, rows))


def test_seed_004_figure_7_knee_is_8():
    """Throughput grows almost linearly up to max-num-seqs 8, then stops while TTFT climbs."""
    k = find_knee(load_sweep([str(CPU_SWEEP)]))
    assert k.found and k.concurrency == 8
    assert "8 -> 16" in k.reason
    assert "10% output tokens/s per doubling" in k.definition and "20% per doubling" in k.definition


def test_plateau_with_latency_growth(tmp_path):
    # 1..16 doubling: +90%, +80%, +5% (TTFT x3), flat
    s = _sweep(tmp_path, [(1, 100, 100, 20), (2, 190, 110, 21), (4, 342, 130, 22), (8, 359, 390, 23), (16, 360, 900, 24)])
    k = find_knee(s)
    assert (k.found, k.concurrency) == (True, 4)
    assert [round(x.throughput_gain_pct, 1) for x in k.steps] == [90.0, 80.0, 5.0, 0.3]


def test_uneven_steps_are_taken_per_doubling(tmp_path):
    # 1 -> 4 is two doublings: x3.61 = +90% per doubling (not a plateau); 4 -> 16: x1.1025 = +5% per doubling
    s = _sweep(tmp_path, [(1, 100, 100, 20), (4, 361, 100, 20), (16, 398.0025, 400, 20)])
    st = steps(s)
    assert st[0].throughput_gain_pct == pytest.approx(90.0)
    assert st[1].throughput_gain_pct == pytest.approx(5.0)
    assert st[1].ttft_p99_growth_pct == pytest.approx(100.0)
    assert find_knee(s).concurrency == 4


def test_tpot_growth_alone_counts(tmp_path):
    s = _sweep(tmp_path, [(1, 100, 100, 20), (2, 105, 100, 30), (4, 106, 100, 31)])
    assert find_knee(s).concurrency == 1


def test_still_rising_has_no_knee_and_says_extend(tmp_path):
    s = _sweep(tmp_path, [(1, 100, 100, 20), (2, 195, 105, 21), (4, 380, 110, 22)])
    k = find_knee(s)
    assert (k.found, k.concurrency) == (False, 4)
    assert "extend the sweep" in k.reason


def test_flat_without_latency_growth_stands_in_with_best_throughput(tmp_path):
    s = _sweep(tmp_path, [(1, 100, 100, 20), (2, 104, 100, 20), (4, 103, 101, 20)])
    k = find_knee(s)
    assert (k.found, k.concurrency) == (False, 2)
    assert "without p99 latency growing" in k.reason


def test_thresholds_are_parameters(tmp_path):
    # 1 -> 2: +50% throughput, TTFT +30%; 2 -> 4: +9.3% throughput, TTFT +53.8%
    s = _sweep(tmp_path, [(1, 100, 100, 20), (2, 150, 130, 20), (4, 164, 200, 20)])
    assert find_knee(s).concurrency == 2
    assert find_knee(s, KneeCriteria(min_gain_pct=60)).concurrency == 1
    assert not find_knee(s, KneeCriteria(min_gain_pct=5)).found
    assert not find_knee(s, KneeCriteria(max_latency_growth_pct=60)).found
    # exactly 10% is not less than 10%: no knee
    assert not find_knee(_sweep(tmp_path / "b", [(1, 100, 100, 20), (2, 110, 200, 20)])).found


def test_slo_limit(tmp_path):
    s = _sweep(tmp_path, [(1, 100, 500, 20), (2, 190, 900, 25), (4, 300, 1500, 30), (8, 320, 1900, 60)])
    assert slo_limit(s, 1.0, 0.05).concurrency == 2
    assert "concurrency 4 misses it: p99 TTFT 1.500 s > 1 s" in slo_limit(s, 1.0, 0.05).reason
    assert slo_limit(s, 2.0, 0.05).concurrency == 4            # 8 misses on TPOT
    assert slo_limit(s, 2.0, 0.1).concurrency == 8
    assert slo_limit(s, 0.4, 0.1).concurrency is None
    with pytest.raises(InvalidOptionError, match="--slo-ttft-p99"):
        slo_limit(s, 0, 0.1)


def test_slo_limit_ignores_a_level_past_the_first_violation(tmp_path):
    s = _sweep(tmp_path, [(1, 100, 500, 20), (2, 190, 1200, 25), (4, 300, 900, 30)])
    assert slo_limit(s, 1.0, 0.05).concurrency == 1

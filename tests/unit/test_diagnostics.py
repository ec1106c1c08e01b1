"""The multi-node diagnostics shipped in charts/vllm-inference (files/diagnostics, run by helm
test inside the group's pods): parsing of `nvidia-smi topo -m` and NCCL logs, the bus-bandwidth
arithmetic and the pass/fail decision, on the sample outputs in tests/unit/data/diagnostics."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

import pytest

from tests.harness.paths import CHARTS

SCRIPTS = CHARTS / "vllm-inference" / "files" / "diagnostics"
DATA = Path(__file__).parent / "data" / "diagnostics"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"diagnostics_{name}", SCRIPTS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


topology = _load("gpu_topology")
allreduce = _load("allreduce")


def sample(name: str) -> str:
    return (DATA / name).read_text()


# ------------------------------------------------------------------------------ nvidia-smi topo

def test_parse_p5_matrix_with_terminal_escape_codes() -> None:
    topo = topology.parse_topo(sample("topo-p5-48xlarge.txt"))
    assert topo.gpus == [f"GPU{i}" for i in range(8)]
    assert topo.link("GPU0", "GPU7") == "NV18" and topo.link("GPU3", "GPU3") == "X"
    assert len(topo.links) == 64, "only GPU-to-GPU cells, NIC and affinity columns dropped"


@pytest.mark.parametrize("name, tp, passed, fragment", [
    ("topo-p5-48xlarge.txt", 8, True, "1 TP group(s) of 8 GPU(s), every pair NVLink-connected (NV18)"),
    ("topo-p4d-24xlarge.txt", 8, True, "(NV12)"),
    ("topo-p4d-24xlarge.txt", 4, True, "2 TP group(s) of 4"),
    ("topo-p5-48xlarge-nvlink-down.txt", 8, False, "1 GPU pair(s) inside a tensor-parallel group are not NVLink-connected: GPU2-GPU3 SYS"),
    ("topo-g6e-12xlarge.txt", 4, False, "6 GPU pair(s)"),
    ("topo-g6e-12xlarge.txt", 1, True, "4 TP group(s) of 1 GPU(s)"),
])
def test_check_verdicts(name: str, tp: int, passed: bool, fragment: str) -> None:
    ok, report = topology.check(sample(name), tp)
    assert ok is passed
    assert fragment in report, report


def test_nvlink_fault_outside_the_tp_groups_is_not_a_failure() -> None:
    # GPU2-GPU3 is broken; with TP 2 the groups are (0,1) (2,3) ... so it still fails, with TP 1
    # no pair shares a group.
    text = sample("topo-p5-48xlarge-nvlink-down.txt")
    assert topology.non_nvlink_pairs(topology.parse_topo(text), 2) == [("GPU2", "GPU3", "SYS")]
    assert topology.non_nvlink_pairs(topology.parse_topo(text), 1) == []


def test_pcie_pairs_are_named_with_their_link() -> None:
    bad = topology.non_nvlink_pairs(topology.parse_topo(sample("topo-g6e-12xlarge.txt")), 4)
    assert ("GPU0", "GPU1", "NODE") in bad and ("GPU1", "GPU2", "SYS") in bad


@pytest.mark.parametrize("text, message", [
    ("nvidia-smi: command not found\n", "no header line"),
    ("\tGPU0\tGPU1\nGPU0\t X \n", "cells"),
])
def test_malformed_topology_output_is_an_error(text: str, message: str) -> None:
    with pytest.raises(topology.TopologyError, match=message):
        topology.parse_topo(text)


def test_more_tp_than_visible_gpus_is_an_error() -> None:
    with pytest.raises(topology.TopologyError, match="sees 4 GPUs, tensor parallel size is 8"):
        topology.check(sample("topo-g6e-12xlarge.txt"), 8)


def test_topology_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert topology.main(["--tp", "8", "--input", str(DATA / "topo-p5-48xlarge.txt")]) == 0
    assert topology.main(["--tp", "8", "--input", str(DATA / "topo-p5-48xlarge-nvlink-down.txt")]) == 1
    junk = tmp_path / "junk.txt"
    junk.write_text("no matrix here\n")
    assert topology.main(["--tp", "8", "--input", str(junk)]) == 2
    assert "FAIL" in capsys.readouterr().out


# ------------------------------------------------------------------------------ all-reduce

def test_bus_bandwidth_follows_the_nccl_tests_formula() -> None:
    # 256 MiB over 16 ranks in 1.5 ms: algbw = 268435456 / 0.0015 / 1e9 = 178.957 GB/s,
    # busbw = algbw * 2 * 15 / 16 = 335.544 GB/s.
    algbw, busbw = allreduce.bus_bandwidth_gbps(256 << 20, 0.0015, 16)
    assert algbw == pytest.approx(178.957, abs=1e-3)
    assert busbw == pytest.approx(335.544, abs=1e-3)
    # two ranks: busbw == algbw
    assert allreduce.bus_bandwidth_gbps(10**9, 1.0, 2) == (1.0, 1.0)


@pytest.mark.parametrize("size, seconds, world", [(0, 1.0, 2), (1, 0.0, 2), (1, 1.0, 1)])
def test_bus_bandwidth_rejects_nonsense(size: int, seconds: float, world: int) -> None:
    with pytest.raises(ValueError):
        allreduce.bus_bandwidth_gbps(size, seconds, world)


@pytest.mark.parametrize("busbw, expected, fraction, passed", [
    (335.5, 400.0, 0.25, True),      # p5.48xlarge over EFA: 84% of 3200 Gbps
    (100.0, 400.0, 0.25, True),      # exactly at the floor passes
    (99.9, 400.0, 0.25, False),
    (3.1, 400.0, 0.25, False),       # TCP sockets over the ENA interface
    (3.1, 0.0, 0.25, True),          # no rating: reported, never judged
    (40.0, 50.0, 0.5, True),         # g6e.48xlarge 400 Gbps
])
def test_verdict_threshold(busbw: float, expected: float, fraction: float, passed: bool) -> None:
    ok, message = allreduce.verdict(busbw, expected, fraction)
    assert ok is passed, message
    assert message.startswith("OK" if passed else "FAIL") or expected == 0


def test_verdict_rejects_a_bad_fraction() -> None:
    with pytest.raises(ValueError, match="min_fraction"):
        allreduce.verdict(1.0, 1.0, 0)


@pytest.mark.parametrize("log, network", [
    ("nccl-info-efa.log", "Libfabric"),
    ("nccl-info-socket.log", "Socket"),
    ("nccl-info-ofi-provider-only.log", "AWS Libfabric (efa)"),
])
def test_network_from_nccl_log(log: str, network: str) -> None:
    assert allreduce.network_from_log(sample(log)) == network


def test_socket_transport_fails_even_when_fast_enough() -> None:
    """A rating set low by mistake must not hide a TCP fallback the log proves."""
    result = allreduce.evaluate(256 << 20, 0.0015, 16, expected_gbps=10.0, min_fraction=0.25,
                                nccl_log=sample("nccl-info-socket.log"))
    assert not result.passed and "Socket" in result.message


def test_evaluate_on_efa_and_result_round_trip() -> None:
    result = allreduce.evaluate(256 << 20, 0.0015, 16, expected_gbps=400.0, min_fraction=0.25,
                                nccl_log=sample("nccl-info-efa.log"))
    assert result.passed and result.transport == "Libfabric"
    assert result.busbw_gbps == pytest.approx(335.544, abs=1e-3)
    printed = "pod 1/2: 8 GPU(s)\nRESULT " + json.dumps(asdict(result)) + "\n" + result.message
    assert allreduce.parse_result(printed) == result
    with pytest.raises(ValueError, match="no RESULT"):
        allreduce.parse_result("NCCL WARN something\n")


def test_tcp_fallback_on_p5_fails() -> None:
    # 256 MiB in 150 ms over 16 ranks: 3.36 GB/s bus bandwidth, < 1% of 400 GB/s.
    result = allreduce.evaluate(256 << 20, 0.150, 16, expected_gbps=400.0, min_fraction=0.25,
                                nccl_log=sample("nccl-info-socket.log"))
    assert not result.passed
    assert result.busbw_gbps == pytest.approx(3.355, abs=1e-3)
    assert "0.8% of the instance's 400.0 GB/s" in result.message


def test_allreduce_cli_outside_a_group(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for var in ("LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX", "LWS_GROUP_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert allreduce.main([]) == 2
    assert "LWS_LEADER_ADDRESS is not set" in capsys.readouterr().out


def test_scripts_need_only_the_standard_library_to_import() -> None:
    """They run with the serving image's python3; torch is imported only when running."""
    for path in SCRIPTS.glob("*.py"):
        head = [line for line in path.read_text().splitlines() if line.startswith(("import ", "from "))]
        assert not [line for line in head if "torch" in line], f"{path.name} imports torch at module level"


# ------------------------------------------------------------------------- live groups (run_groups)

runner = _load("run_groups")


@pytest.fixture
def fake_api(tmp_path: Path):
    from tests.harness.fake_kube_api import FakeKubeApi

    api = FakeKubeApi(tmp_path / "api").start()
    yield api
    api.stop()


def _run(api, monkeypatch, capsys, *args: str) -> tuple[int, str]:
    for k, v in api.pod_env().items():
        monkeypatch.setenv(k, v)
    code = runner.main(["--namespace", "llm", "--name", "big", "--group-size", "2", "--timeout", "30",
                        *args, "--", "python3", "/opt/check.py", "--tp", "8"])
    return code, capsys.readouterr().out


def test_runner_checks_every_live_group(fake_api, monkeypatch, capsys) -> None:
    from tests.harness.fake_kube_api import lws_pods

    # Three groups live (scaled out from two), plus another release's pods that must be left alone.
    fake_api.pods = lws_pods("big", "llm", 3, 2) + lws_pods("other", "llm", 1, 2)
    code, out = _run(fake_api, monkeypatch, capsys)
    assert code == 0, out
    assert fake_api.lists == ["leaderworkerset.sigs.k8s.io/name=big"]
    assert sorted(p for p, _, _ in fake_api.execs) == sorted(p["metadata"]["name"] for p in lws_pods("big", "llm", 3, 2))
    assert all(c == "vllm" and cmd == ["python3", "/opt/check.py", "--tp", "8"] for _, c, cmd in fake_api.execs)
    assert "3 live group(s) of big" in out and "6/6 pod(s) passed" in out


def test_runner_fails_when_one_pod_fails(fake_api, monkeypatch, capsys) -> None:
    from tests.harness.fake_kube_api import lws_pods

    fake_api.pods = lws_pods("big", "llm", 2, 2)
    fake_api.outcomes = {"big-1-1": 3}
    code, out = _run(fake_api, monkeypatch, capsys)
    assert code == 1
    assert "=== group 1 worker 1 pod big-1-1: FAIL (exit 3" in out and "3/4 pod(s) passed" in out


@pytest.mark.parametrize("pods, message", [
    ([], "FAIL: no pod in namespace llm matches leaderworkerset.sigs.k8s.io/name=big"),
    ("incomplete", "FAIL: group 1: worker indexes [0], expected 0..1"),
    ("unready", "FAIL: group 0: pods not Running and Ready: big-0, big-0-1"),
])
def test_runner_refuses_missing_or_unready_groups(fake_api, monkeypatch, capsys, pods, message) -> None:
    from tests.harness.fake_kube_api import lws_pods

    if pods == "incomplete":
        pods = [p for p in lws_pods("big", "llm", 2, 2) if p["metadata"]["name"] != "big-1-1"]
    elif pods == "unready":
        pods = lws_pods("big", "llm", 1, 2, ready=False)
    fake_api.pods = pods
    code, out = _run(fake_api, monkeypatch, capsys)
    assert code == 1 and message in out, out
    assert fake_api.execs == [], "no check may start when a group is not whole"


def test_runner_outside_a_pod_names_what_is_missing(monkeypatch, capsys) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    code = runner.main(["--namespace", "llm", "--name", "big", "--group-size", "2", "--", "true"])
    assert code == 1
    assert "KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set" in capsys.readouterr().out


def test_runner_usage_errors(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        runner.main(["--namespace", "llm", "--name", "big", "--group-size", "0", "--", "true"])
    assert exc.value.code == 2 and "--group-size must be >= 1 (got 0)" in capsys.readouterr().err

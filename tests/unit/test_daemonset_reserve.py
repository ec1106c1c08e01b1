"""The DaemonSet reserve: a setting (--daemonset-reserve-cpu / --daemonset-reserve-memory) with a
default itemised from what an EKS GPU node runs; the Plan's pod section owns it, the pod requests
are node allocatable minus it, and check-fit takes it off every node."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.cli.main import main
from vllm_eks.core.units import GIB, MIB
from vllm_eks.planning import pod_resources as sizing
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

ARGS = ["plan", "--json", "--model", "llama-3.1-70b-instruct", "--instance", "p5.48xlarge"]


def test_default_reserve_covers_the_itemised_daemonsets_and_more_than_half_a_percent() -> None:
    cpu = sum(d.cpu_millicores for d in sizing.TYPICAL_GPU_NODE_DAEMONSETS)
    mem = sum(d.memory_bytes for d in sizing.TYPICAL_GPU_NODE_DAEMONSETS)
    assert sizing.DEFAULT_DAEMONSET_RESERVE_CPU_M >= cpu and sizing.DEFAULT_DAEMONSET_RESERVE_MEMORY >= mem
    names = " ".join(d.name for d in sizing.TYPICAL_GPU_NODE_DAEMONSETS)
    for agent in ("aws-node", "kube-proxy", "ebs-csi-node", "eks-pod-identity-agent", "nvidia-device-plugin",
                  "efa-device-plugin", "dcgm-exporter", "node-exporter", "fluent-bit"):
        assert agent in names
    p5 = instance_catalog()["p5.48xlarge"]
    assert sizing.DEFAULT_DAEMONSET_RESERVE_CPU_M > 0.005 * p5.alloc_cpu_millicores * 1.5


def test_the_plan_owns_the_reserve_and_the_requests_follow_it() -> None:
    plan = make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="p5.48xlarge"))
    hw = instance_catalog()["p5.48xlarge"]
    pod = plan.pod
    assert pod.daemonset_reserve_cpu_millicores == sizing.DEFAULT_DAEMONSET_RESERVE_CPU_M
    assert pod.daemonset_reserve_memory_bytes == sizing.DEFAULT_DAEMONSET_RESERVE_MEMORY
    assert pod.cpu_request_millicores == (hw.alloc_cpu_millicores - pod.daemonset_reserve_cpu_millicores) // 10 * 10
    assert pod.memory_request_bytes == (hw.alloc_memory_bytes - pod.daemonset_reserve_memory_bytes) // MIB * MIB
    keys = {d.key for d in plan.derivations}
    assert {"daemonset_reserve_cpu_millicores", "daemonset_reserve_memory_bytes"} <= keys


def test_flags_set_the_reserve() -> None:
    result = CliRunner().invoke(main, [*ARGS, "--daemonset-reserve-cpu", "3500m", "--daemonset-reserve-memory", "8Gi"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    hw = instance_catalog()["p5.48xlarge"]
    assert out["daemonset_reserve_cpu_millicores"] == 3500 and out["daemonset_reserve_memory_bytes"] == 8 * GIB
    assert out["cpu_request_millicores"] == (hw.alloc_cpu_millicores - 3500) // 10 * 10


@pytest.mark.parametrize("flag, value, says", [
    ("--daemonset-reserve-cpu", "lots", "--daemonset-reserve-cpu 'lots'"),
    ("--daemonset-reserve-cpu", "-1", "--daemonset-reserve-cpu"),
    ("--daemonset-reserve-cpu", "500", "allocatable"),
    ("--daemonset-reserve-memory", "4 GB", "--daemonset-reserve-memory '4 GB'"),
    ("--daemonset-reserve-memory", "4Ti", "--daemonset-reserve-memory"),
])
def test_bad_reserve_is_one_clear_error(flag: str, value: str, says: str) -> None:
    result = CliRunner().invoke(main, [*ARGS, flag, value])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert says in result.output, result.output

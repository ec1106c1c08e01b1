"""--cache: the Plan's cold and warm start-up budgets, the startup probe's choice, the cache claim's
size, the values the generator writes for each cache, and the one-line errors naming the flags
(docs/caching.md)."""

from __future__ import annotations

import math

import pytest
import yaml

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import MIB
from vllm_eks.planning.model_source import DEFAULT_LOAD_MIB_S
from vllm_eks.planning.planner import make_plan
from vllm_eks.planning.pod_resources import (
    CACHE_READ_MIB_S,
    ENGINE_INIT_SECONDS,
    SCRATCH_BYTES,
    STARTUP_ROUNDING_SECONDS,
    WARM_ENGINE_INIT_SECONDS,
)
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values

BASE = dict(model="qwen2.5-7b", instance="g6.xlarge")


def plan(**kw):
    return make_plan(PlanRequest(**{**BASE, **kw}))


def _up(s: float) -> int:
    return math.ceil(s / STARTUP_ROUNDING_SECONDS) * STARTUP_ROUNDING_SECONDS


@pytest.mark.parametrize("cache", ["emptydir", "pvc", "instance-store"])
def test_cold_and_warm_budgets_follow_their_formulas(cache: str) -> None:
    p = plan(cache=cache)
    ckpt = p.memory.weights_bytes_total
    assert p.pod.cache == cache
    assert p.pod.cold_startup_seconds == _up(2 * ckpt / (DEFAULT_LOAD_MIB_S['huggingface'][0] * MIB) + ENGINE_INIT_SECONDS)
    rate = CACHE_READ_MIB_S[cache] * MIB
    assert p.pod.cache_read_bytes_per_s == rate
    assert p.pod.warm_startup_seconds == _up(ckpt / rate + WARM_ENGINE_INIT_SECONDS)
    assert p.pod.warm_startup_seconds < p.pod.cold_startup_seconds
    # the probe keeps the cold budget: a first start on a new claim or node is cold
    assert p.pod.startup_probe_seconds == p.pod.cold_startup_seconds
    keys = {d.key: d for d in p.pod.derivations}
    for k in ("cold_startup_seconds", "warm_startup_seconds", "startup_probe_seconds", "cache_read_bytes_per_s",
              "cache_volume_bytes"):
        assert k in keys, k
    assert "cold" in keys["startup_probe_seconds"].formula


def test_cache_read_rate_flag_and_streamed_source() -> None:
    fast = plan(cache="pvc", cache_read_mib_s=2000)
    assert fast.pod.cache_read_bytes_per_s == 2000 * MIB
    assert fast.pod.warm_startup_seconds < plan(cache="pvc").pod.warm_startup_seconds
    # an s3 source is streamed at every start: the warm start reads it at the load bandwidth
    s3 = plan(cache="pvc", model_source="s3://bucket/qwen")
    assert s3.pod.warm_startup_seconds == _up(s3.memory.weights_bytes_total / (DEFAULT_LOAD_MIB_S['s3'][0] * MIB)
                                              + WARM_ENGINE_INIT_SECONDS)
    assert s3.pod.cache_volume_bytes == SCRATCH_BYTES


def test_a_pvc_cache_holds_the_download_not_the_node() -> None:
    empty, pvc = plan(), plan(cache="pvc")
    assert empty.pod.ephemeral_storage_bytes == empty.memory.weights_bytes_total + SCRATCH_BYTES
    assert pvc.pod.ephemeral_storage_bytes == SCRATCH_BYTES
    assert pvc.pod.cache_volume_bytes == pvc.memory.weights_bytes_total + SCRATCH_BYTES


def test_instance_store_needs_a_raid0_pool() -> None:
    assert plan(cache="instance-store").pool.instance_store_policy == "RAID0"
    with pytest.raises(InvalidOptionError) as e:
        make_plan(PlanRequest(model="qwen2.5-7b", gpu_memory_mib=81559, gpus_per_node=8,
                              hardware_name="p9.48xlarge", cache="instance-store"))
    assert "--cache instance-store" in str(e.value) and "--hardware-name" in str(e.value)


def test_values_for_each_cache() -> None:
    assert build_values(plan(), ValuesOptions()).cache.type == "emptyDir"
    assert build_values(plan(cache="instance-store"), ValuesOptions()).cache.type == "instanceStore"
    p = plan(cache="pvc")
    created = build_values(p, ValuesOptions(cache_storage_class="efs-sc")).cache
    assert (created.type, created.pvc.create, created.pvc.access_mode, created.pvc.storage_class_name) == (
        "pvc", True, "ReadWriteMany", "efs-sc")
    assert created.pvc.size == f"{math.ceil(p.pod.cache_volume_bytes / 2**30)}Gi"
    existing = build_values(p, ValuesOptions(cache_pvc="shared-cache")).cache
    assert (existing.pvc.claim_name, existing.pvc.create, existing.pvc.access_mode) == (
        "shared-cache", False, "ReadWriteMany")
    assert build_values(p, ValuesOptions(cache_size="500Gi", cache_storage_class="efs-sc")).cache.pvc.size == "500Gi"


@pytest.mark.parametrize("args,must_contain", [
    (["--cache-pvc", "x"], ["--cache-pvc", "--cache pvc"]),
    (["--cache", "instance-store", "--cache-size", "10Gi"], ["--cache-size", "--cache pvc"]),
    (["--cache", "pvc", "--cache-pvc", "x", "--cache-size", "10Gi"], ["--cache-pvc", "--cache-size"]),
    (["--cache", "pvc", "--cache-pvc", "x", "--cache-storage-class", "gp3"], ["--cache-pvc", "--cache-storage-class"]),
    (["--cache", "pvc", "--cache-size", "lots"], ["--cache-size"]),
    (["--cache", "pvc", "--cache-read-mib-s", "0"], ["--cache-read-mib-s"]),
])
def test_bad_cache_flags_are_one_line(cli, tmp_path, args, must_contain) -> None:
    r = cli("values", "--model", "qwen2.5-7b", "--instance", "g6.xlarge", "--out", str(tmp_path / "o"), *args)
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert all(m in lines[0] for m in must_contain), lines[0]


def test_values_command_writes_the_cache(cli, tmp_path) -> None:
    out = tmp_path / "o"
    r = cli("values", "--model", "qwen2.5-7b", "--instance", "g6.xlarge", "--cache", "pvc",
            "--cache-storage-class", "efs-sc", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    cache = yaml.safe_load((out / "vllm-inference.yaml").read_text())["cache"]
    assert cache["type"] == "pvc" and cache["pvc"]["create"] is True
    assert cache["pvc"]["accessMode"] == "ReadWriteMany" and cache["pvc"]["storageClassName"] == "efs-sc"
    r = cli("explain", "--model", "qwen2.5-7b", "--instance", "g6.xlarge", "--cache", "pvc")
    assert "cold_startup_seconds" in r.stdout and "warm_startup_seconds" in r.stdout

"""Model sources in the generator (docs/model-sources.md): --model-source-kind with its flags,
one-line errors for bad combinations, the Plan's load bandwidth per source and what `explain`
says about it, and the vllm-inference values each source writes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.unit.cli_result import one_line_error
from vllm_eks.cli.main import main
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB, MIB
from vllm_eks.planning.model_source import DEFAULT_FSX_STORAGE_TIB, DEFAULT_FSX_TIER_MB_S_PER_TIB, DEFAULT_LOAD_MIB_S
from vllm_eks.planning.planner import make_plan
from vllm_eks.planning.pod_resources import ENGINE_INIT_SECONDS, STARTUP_ROUNDING_SECONDS
from vllm_eks.spec.request import PlanRequest

BASE = ["--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge"]
FSX_IDS = ["--fsx-file-system-id", "fs-0123456789abcdef0", "--fsx-dns-name",
           "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "--fsx-mount-name", "abcdef12"]
FSX = ["--model-source", "/models/llama", "--model-source-kind", "fsx"]
MOUNTPOINT = ["--model-source", "/models/llama", "--model-source-kind", "mountpoint-s3"]


def plan(**kw):
    return make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge", **kw))


@pytest.mark.parametrize(("kw", "kind"), [
    ({}, "huggingface"),
    ({"model_source": "s3://bucket/llama"}, "s3"),
    ({"model_source": "/models/llama"}, "pvc"),
    ({"model_source": "/models/llama", "model_source_kind": "mountpoint-s3"}, "mountpoint-s3"),
])
def test_default_bandwidth_per_source(kw: dict, kind: str) -> None:
    p = plan(**kw)
    assert p.pod.model_source_kind == kind
    assert p.pod.load_bandwidth_bytes_per_s == DEFAULT_LOAD_MIB_S[kind][0] * MIB
    (d,) = [d for d in p.pod.derivations if d.key == "load_bandwidth_bytes_per_s"]
    assert d.formula.startswith(f"default for --model-source-kind {kind}: ")


def test_the_table_orders_the_sources_as_their_media() -> None:
    # a gp3 claim is the slowest, streaming S3 with many readers the fastest default
    rates = {k: v[0] for k, v in DEFAULT_LOAD_MIB_S.items()}
    assert rates["pvc"] < rates["mountpoint-s3"] < rates["huggingface"] < rates["s3"]


def test_fsx_bandwidth_is_tier_times_storage() -> None:
    default = plan(model_source="/models/llama", model_source_kind="fsx")
    assert default.pod.load_bandwidth_bytes_per_s == int(DEFAULT_FSX_TIER_MB_S_PER_TIB * DEFAULT_FSX_STORAGE_TIB * 10**6)
    big = plan(model_source="/models/llama", model_source_kind="fsx", fsx_throughput_per_tib=1000, fsx_storage_tib=4.8)
    assert big.pod.load_bandwidth_bytes_per_s == 4800 * 10**6
    assert big.pod.cold_startup_seconds < default.pod.cold_startup_seconds
    (d,) = [d for d in big.pod.derivations if d.key == "load_bandwidth_bytes_per_s"]
    assert "1000 MB/s per TiB x 4.8 TiB" in d.formula and "shared by the pods" in d.formula


def test_override_wins_over_every_source() -> None:
    for kw in ({}, {"model_source": "s3://models-bucket/m"}, {"model_source": "/models/m", "model_source_kind": "fsx"}):
        p = plan(load_bandwidth_mib_s=2000, **kw)
        assert p.pod.load_bandwidth_bytes_per_s == 2000 * MIB
        (d,) = [d for d in p.pod.derivations if d.key == "load_bandwidth_bytes_per_s"]
        assert d.formula == "set by --load-bandwidth-mib-s"


def test_s3_streams_on_vllm_serve_and_downloads_on_ray() -> None:
    streamed = plan(model_source="s3://bucket/llama")
    on_ray = plan(model_source="s3://bucket/llama", topology="ray-serve")
    ckpt = streamed.memory.weights_bytes_total
    bw = DEFAULT_LOAD_MIB_S["s3"][0] * MIB

    def up(s: float) -> int:
        return math.ceil(s / STARTUP_ROUNDING_SECONDS) * STARTUP_ROUNDING_SECONDS

    assert streamed.pod.cold_startup_seconds == up(ckpt / bw + ENGINE_INIT_SECONDS)
    # Ray Serve LLM downloads to the cache volume, then vLLM reads it: two passes, and the node's
    # ephemeral storage holds the checkpoint
    assert on_ray.pod.cold_startup_seconds == up(2 * ckpt / bw + ENGINE_INIT_SECONDS)
    assert on_ray.pod.ephemeral_storage_bytes > streamed.pod.ephemeral_storage_bytes + ckpt - GIB
    assert "--load-format" in streamed.engine_args and "--load-format" not in on_ray.engine_args


@pytest.mark.parametrize(("kw", "needle"), [
    ({"model_source_kind": "s3"}, "--model-source-kind s3 needs --model-source s3://"),
    ({"model_source_kind": "fsx", "model_source": "org/name"}, "--model-source-kind fsx needs --model-source"),
    ({"model_source_kind": "huggingface", "model_source": "s3://b/m"}, "--model-source-kind s3"),
    ({"fsx_storage_tib": 2.4}, "--fsx-storage-tib: only with --model-source-kind fsx"),
    ({"fsx_throughput_per_tib": 500, "model_source": "/models/m"}, "--fsx-throughput-per-tib: only with"),
])
def test_bad_source_combinations_name_the_flags(kw: dict, needle: str) -> None:
    with pytest.raises(InvalidOptionError, match=needle.replace("(", r"\(")):
        plan(**kw)


@pytest.mark.parametrize(("args", "needles"), [
    (FSX, ("--model-source-kind fsx needs --fsx-file-system-id, --fsx-dns-name, --fsx-mount-name",)),
    (FSX + FSX_IDS[:4], ("--model-source-kind fsx needs --fsx-mount-name",)),
    (MOUNTPOINT, ("--model-source-kind mountpoint-s3 needs --s3-mount-bucket",)),
    (["--model-source", "/models/llama", "--pvc-name", "w", *FSX_IDS[:2]], ("--fsx-file-system-id", "not used with")),
    (MOUNTPOINT + ["--s3-mount-bucket", "models-bucket", "--s3-mount-prefix", "hub"], ("--s3-mount-prefix",)),
    (FSX + FSX_IDS + ["--model-mount-path", "/data"], ("--model-mount-path",)),
    (FSX + FSX_IDS + ["--fsx-throughput-per-tib", "300"], ("--fsx-throughput-per-tib",)),
    (["--fsx-storage-tib", "0"], ("--fsx-storage-tib: Input should be greater than 0",)),
])
def test_values_refuses_with_one_line_naming_the_flags(args: list[str], needles: tuple[str, ...], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["values", *BASE, *args, "--out", str(tmp_path / "out")])
    one_line_error(result, *needles)
    assert not (tmp_path / "out").exists()


def _values(args: list[str], tmp_path: Path) -> dict:
    result = CliRunner().invoke(main, ["values", *BASE, *args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    return yaml.safe_load((tmp_path / "vllm-inference.yaml").read_text())["model"]


def test_values_of_fsx(tmp_path: Path) -> None:
    m = _values(FSX + FSX_IDS, tmp_path)
    assert m["source"] == "fsx" and m["name"] == "/models/llama"
    assert m["fsx"] == {**m["fsx"], "fileSystemId": "fs-0123456789abcdef0", "mountName": "abcdef12",
                        "dnsName": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "mountPath": "/models"}
    assert m.get("huggingface", {}).get("tokenSecret", {}).get("name", "") == ""  # no token for a mounted source


def test_values_of_mountpoint_s3(tmp_path: Path) -> None:
    m = _values(MOUNTPOINT + ["--s3-mount-bucket", "models-bucket", "--s3-mount-prefix", "hub/",
                              "--s3-mount-region", "us-east-1", "--topology", "ray-serve"], tmp_path)
    assert m["source"] == "mountpointS3"
    assert m["mountpointS3"] == {**m["mountpointS3"], "bucket": "models-bucket", "prefix": "hub/",
                                 "region": "us-east-1", "mountPath": "/models"}


def test_explain_shows_the_bandwidth_and_its_basis() -> None:
    result = CliRunner().invoke(main, ["explain", *BASE, *FSX, "--fsx-throughput-per-tib", "500"])
    assert result.exit_code == 0, result.output
    assert "load_bandwidth_bytes_per_s = 572 MiB/s" in result.output
    assert "FSx for Lustre baseline 500 MB/s per TiB x 1.2 TiB" in result.output

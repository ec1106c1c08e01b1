"""Storage inputs that cannot work refused in one line naming the flag: ReadWriteMany claims
without a StorageClass, claims too small for what they hold, staging that the servers never read,
model volumes over the chart's own mounts, S3 bucket names S3 refuses, rates that would make a
start-up or staging deadline days long, and a local config.json's served name (docs/caching.md,
docs/staging.md, docs/model-sources.md)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.unit.cli_result import one_line_error
from vllm_eks.planning.rate_bounds import MAX_PASS_SECONDS
from vllm_eks.spec.s3 import bucket_problem, s3_uri_problem
from vllm_eks.values.vllm_inference.model_source import RESERVED_MOUNT_PATHS, mount_collision

BASE = ["--model", "qwen2.5-7b", "--instance", "g6.xlarge"]


def values(cli, tmp_path, *args):
    return cli("values", *BASE, "--out", str(tmp_path / "out"), *args)


# -- ReadWriteMany claims need a class; a claim holds what the Plan puts on it -----------------

def test_cache_claim_without_a_class_is_refused_naming_the_flag(cli, tmp_path) -> None:
    one_line_error(values(cli, tmp_path, "--cache", "pvc"), "--cache-storage-class", "ReadWriteMany", "--cache-pvc")


def test_staging_claim_without_a_class_is_refused_naming_the_flag(cli, tmp_path) -> None:
    one_line_error(values(cli, tmp_path, "--stage", "pvc", "--model-source", "/models/q"),
                   "--stage-storage-class", "ReadWriteMany", "--stage pvc:CLAIM")


def test_staging_class_reaches_the_created_claim(cli, tmp_path) -> None:
    r = values(cli, tmp_path, "--stage", "pvc", "--model-source", "/models/q", "--stage-storage-class", "efs-sc")
    assert r.exit_code == 0, r.output
    pvc = yaml.safe_load((tmp_path / "out" / "vllm-inference.yaml").read_text())["staging"]["pvc"]
    # accessMode is the chart's default, ReadWriteMany, and so left out of the file
    assert (pvc["create"], pvc["storageClassName"], pvc.get("accessMode", "ReadWriteMany")) == (
        True, "efs-sc", "ReadWriteMany")


@pytest.mark.parametrize("args, needles", [
    (["--stage-storage-class", "efs-sc"], ["--stage-storage-class: only with --stage pvc"]),
    (["--stage", "pvc:weights", "--model-source", "/models/q", "--stage-storage-class", "efs-sc"],
     ["--stage-storage-class", "existing claim"]),
    (["--stage", "s3://models-bucket/q", "--model-source", "s3://models-bucket/q", "--stage-storage-class", "x"],
     ["--stage-storage-class: only with --stage pvc"]),
])
def test_staging_class_only_where_the_chart_creates_the_claim(cli, tmp_path, args, needles) -> None:
    one_line_error(values(cli, tmp_path, *args), *needles)


@pytest.mark.parametrize("size", ["0", "0Gi", "1Gi", "10Mi"])
def test_cache_size_below_what_it_holds_is_refused(cli, tmp_path, size) -> None:
    # qwen2.5-7b downloads ~15 GiB into the cache: a claim below the plan's cache volume cannot hold it
    one_line_error(values(cli, tmp_path, "--cache", "pvc", "--cache-storage-class", "efs-sc", "--cache-size", size),
                   f"--cache-size {size}", "cache_volume_bytes")


def test_cache_size_at_least_the_plan_is_kept(cli, tmp_path) -> None:
    r = values(cli, tmp_path, "--cache", "pvc", "--cache-storage-class", "efs-sc", "--cache-size", "1Ti")
    assert r.exit_code == 0, r.output
    assert yaml.safe_load((tmp_path / "out" / "vllm-inference.yaml").read_text())["cache"]["pvc"]["size"] == "1Ti"


# -- staging and sources that cannot meet ------------------------------------------------------

@pytest.mark.parametrize("kind, flags", [
    ("fsx", ["--fsx-file-system-id", "fs-0123456789abcdef0", "--fsx-dns-name", "fs.example",
             "--fsx-mount-name", "abc"]),
    ("mountpoint-s3", ["--s3-mount-bucket", "models-bucket"]),
])
def test_staging_into_a_claim_beside_a_mounted_source_is_refused(cli, tmp_path, kind, flags) -> None:
    one_line_error(values(cli, tmp_path, "--stage", "pvc", "--model-source-kind", kind, "--model-source", "/models/q",
                          "--stage-storage-class", "efs-sc", *flags),
                   "--stage pvc", f"--model-source-kind {kind}", "never mount")


def test_stage_pvc_with_an_existing_claim_name_is_refused(cli, tmp_path) -> None:
    # the chart would create a claim named like one that exists
    one_line_error(values(cli, tmp_path, "--stage", "pvc", "--pvc-name", "other", "--model-source", "/models/q",
                          "--stage-storage-class", "efs-sc"), "--stage pvc", "--pvc-name other", "--stage pvc:other")


# -- model mount paths the chart already uses --------------------------------------------------

@pytest.mark.parametrize("mount", ["/tmp", "/tmp/models", "/dev/shm", "/proc", "/sys/x", "/var/cache/vllm/m",
                                   "/var", "/", "/opt/vllm-eks/scripts", "/opt", "/var/run/secrets/huggingface"])
def test_model_mount_path_over_a_chart_mount_is_refused(cli, tmp_path, mount) -> None:
    at = mount.rstrip("/")
    one_line_error(values(cli, tmp_path, "--model-source-kind", "pvc", "--pvc-name", "weights",
                          "--model-mount-path", mount, "--model-source", f"{at}/qwen"),
                   f"--model-mount-path {at or '/'}", "collides with")


@pytest.mark.parametrize("mount", ["/models", "/mnt/models", "/data", "/var/lib/models", "/opt/models", "/tmpdata"])
def test_model_mount_paths_of_their_own_are_kept(mount) -> None:
    assert mount_collision(mount) is None


def test_the_chart_reserves_the_same_paths() -> None:
    from tests.harness.paths import CHARTS
    text = (CHARTS / "vllm-inference" / "templates" / "_model_source.tpl").read_text()
    line = next(ln for ln in text.splitlines() if 'list "/tmp"' in ln)
    for path in RESERVED_MOUNT_PATHS:
        assert f'"{path}"' in line or (path == "/var/cache/vllm" and "cacheRoot" in line), path


# -- S3 bucket names and URIs ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ab", "a" * 64, "Models", "models_bucket", "models..bucket", "-models", "models-",
                                  ".models", "192.168.5.4", "xn--models", "sthree-models", "amzn-s3-demo-models",
                                  "models-s3alias", "models--ol-s3", "models.mrap", "models--x-s3"])
def test_bucket_names_s3_refuses(name) -> None:
    assert bucket_problem(name), name


@pytest.mark.parametrize("name", ["abc", "a" * 63, "models-bucket", "models.bucket", "my.models-2", "a-.b",
                                  "192.168.5.4a", "0xn--x"])
def test_bucket_names_s3_accepts(name) -> None:
    assert bucket_problem(name) is None, name


@pytest.mark.parametrize("uri", ["s3://", "s3:///key", "s3://models-bucket/a b", "s3://Models/x", "s3://1.2.3.4/x"])
def test_malformed_s3_uris(uri) -> None:
    assert s3_uri_problem(uri), uri


@pytest.mark.parametrize("args, needles", [
    (["--model-source", "s3://models..bucket/q"], ["--model-source 's3://models..bucket/q'", "adjacent dots"]),
    (["--model-source", "s3://10.0.0.1/q"], ["--model-source", "IP address"]),
    (["--model-source", "s3:///q"], ["--model-source", "no bucket"]),
    (["--model-source-kind", "s3", "--model-source", "s3://ab/q"], ["--model-source", "3 to 63"]),
    (["--stage", "s3://models-s3alias/q", "--model-source", "s3://models-s3alias/q"],
     ["--model-source 's3://models-s3alias/q'", "reserved"]),
])
def test_malformed_s3_inputs_name_the_flag(cli, args, needles) -> None:
    one_line_error(cli("plan", *BASE, *args), *needles)


def test_stage_s3_uri_names_the_stage_flag(cli) -> None:
    # --stage is checked before the source it must equal
    one_line_error(cli("plan", *BASE, "--stage", "s3://xn--models/q", "--model-source", "s3://models-bucket/q"),
                   "--stage 's3://xn--models/q'", "reserved")


def test_mountpoint_bucket_reserved_name_names_the_flag(cli, tmp_path) -> None:
    one_line_error(values(cli, tmp_path, "--model-source-kind", "mountpoint-s3", "--model-source", "/models/q",
                          "--s3-mount-bucket", "models--ol-s3"), "--s3-mount-bucket models--ol-s3", "reserved")


@pytest.mark.parametrize("arn", ["my-role", "arn:aws:s3:::models-bucket", "arn:aws:iam::12345:role/x",
                                 "arn:aws:iam::123456789012:user/x"])
def test_role_arn_that_is_not_a_role_arn(cli, tmp_path, arn) -> None:
    one_line_error(values(cli, tmp_path, "--iam-role-arn", arn), "--iam-role-arn")


# -- rates that would make a deadline days long ------------------------------------------------

@pytest.mark.parametrize("args, flag", [
    (["--load-bandwidth-mib-s", "0.01"], "--load-bandwidth-mib-s"),
    (["--cache", "pvc", "--cache-read-mib-s", "0.001"], "--cache-read-mib-s"),
    (["--stage", "pvc", "--model-source", "/models/q", "--stage-bandwidth-mib-s", "0.05"], "--stage-bandwidth-mib-s"),
    (["--model-source-kind", "fsx", "--model-source", "/models/q", "--fsx-storage-tib", "0.00001",
      "--fsx-throughput-per-tib", "50"], "--fsx-throughput-per-tib, --fsx-storage-tib"),
])
def test_rates_whose_pass_takes_days_are_refused(cli, args, flag) -> None:
    err = one_line_error(cli("plan", *BASE, *args), flag, f"{MAX_PASS_SECONDS // 3600} h", "at least")
    assert "days" in err or "years" in err, err


def test_a_slow_but_real_rate_is_kept(cli) -> None:
    # ~15 GiB at 1 MiB/s is ~4 h: slow, but a real link
    r = cli("plan", *BASE, "--load-bandwidth-mib-s", "1")
    assert r.exit_code == 0, r.output


# -- the served name of a local config.json ----------------------------------------------------

def _local_config(tmp_path):
    cfg = tmp_path / "m" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "num_hidden_layers": 24,
                               "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
                               "vocab_size": 151936, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}))
    return cfg


@pytest.mark.parametrize("source", ["s3://models-bucket/qwen-small", "/models/qwen-small"])
def test_local_config_serves_under_the_model_source(cli, tmp_path, source) -> None:
    r = cli("plan", "--model", str(_local_config(tmp_path)), "--instance", "g6.xlarge", "--model-source", source,
            "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["served_model_name"] == source


def test_an_explicit_served_name_still_wins(cli, tmp_path) -> None:
    r = cli("plan", "--model", str(_local_config(tmp_path)), "--instance", "g6.xlarge",
            "--model-source", "/models/q", "--served-model-name", "chat", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["served_model_name"] == "chat", r.output

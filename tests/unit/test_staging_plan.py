"""--stage: the Plan's staging section (claim size from the weights plus margin, copy time, the Job's
deadline), what `explain` prints of it, the staging.* values the generator writes (the servers
load the staged copy) and the one-line errors naming the flags (docs/staging.md)."""

from __future__ import annotations

import json
import math

import pytest

from tests.unit.cli_result import one_line_error
from vllm_eks.core.units import GIB, MIB
from vllm_eks.planning.planner import make_plan
from vllm_eks.planning.staging import (
    DEADLINE_SAFETY,
    DEADLINE_SETUP_SECONDS,
    DEFAULT_STAGE_BANDWIDTH_MIB_S,
    MARGIN_BYTES,
    MARGIN_FRACTION,
)
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values

BASE = ["--model", "qwen2.5-7b", "--instance", "g6.xlarge"]


def plan(**kw):
    return make_plan(PlanRequest(model="qwen2.5-7b", instance="g6.xlarge", **kw))


def test_created_claim_is_the_weights_plus_margin_in_whole_gib() -> None:
    p = plan(stage="pvc", model_source="/models/qwen")
    s = p.staging
    assert s is not None and s.staging_target == "pvc" and s.staging_claim_name is None
    w = p.memory.weights_bytes_total
    assert s.staging_weights_bytes == w
    assert s.staging_claim_bytes == math.ceil((w * (1 + MARGIN_FRACTION) + MARGIN_BYTES) / GIB) * GIB
    assert s.staging_claim_bytes >= w * 1.07 + MARGIN_BYTES  # ext4's 5% root reserve and metadata fit
    assert s.staging_repo == "Qwen/Qwen2.5-7B-Instruct" and s.staging_revision == "main"


@pytest.mark.parametrize("bw", [None, 50.0])
def test_copy_time_and_deadline(bw) -> None:
    p = plan(stage="s3://models-bucket/qwen", model_source="s3://models-bucket/qwen", stage_bandwidth_mib_s=bw)
    s = p.staging
    rate = (bw or DEFAULT_STAGE_BANDWIDTH_MIB_S) * MIB
    assert s.staging_bandwidth_bytes_per_s == rate
    assert s.staging_copy_seconds == math.ceil(p.memory.weights_bytes_total / rate)
    assert s.staging_deadline_seconds == math.ceil((s.staging_copy_seconds * DEADLINE_SAFETY + DEADLINE_SETUP_SECONDS) / 60) * 60
    assert s.staging_claim_bytes is None and s.staging_s3_uri == "s3://models-bucket/qwen"


def test_no_stage_no_section_and_plan_json_unchanged(cli) -> None:
    assert plan().staging is None
    r = cli("plan", *BASE, "--json")
    assert r.exit_code == 0 and '"staging"' not in r.stdout


def test_explain_shows_the_staging_derivations(cli) -> None:
    r = cli("explain", *BASE, "--stage", "pvc", "--model-source", "/models/qwen", "--stage-bandwidth-mib-s", "100")
    assert r.exit_code == 0, r.output
    for key in ("staging_copy_seconds", "staging_deadline_seconds", "staging_claim_bytes"):
        assert f"\n{key} = " in r.stdout, key
    assert "/ 100 MiB/s" in r.stdout and "ext4 keeps 5% for root" in r.stdout


def test_values_pvc_created_claim_is_the_servers_claim(tmp_path) -> None:
    p = plan(stage="pvc", model_source="/models/qwen/7b")
    v = build_values(p, ValuesOptions(release="llm1", stage_storage_class="efs-sc"))
    st = v.staging
    assert st.pvc.storage_class_name == "efs-sc" and st.pvc.access_mode == "ReadWriteMany"
    assert st.enabled and st.target == "pvc" and st.repo == "Qwen/Qwen2.5-7B-Instruct" and st.wait_in_server
    assert (st.pvc.claim_name, st.pvc.create, st.pvc.size, st.pvc.path) == (
        "llm1-weights", True, f"{p.staging.staging_claim_bytes // GIB}Gi", "qwen/7b")
    assert st.active_deadline_seconds == p.staging.staging_deadline_seconds
    # optional as on the servers: a public repo needs no Secret, a gated one fails the copy naming the token
    assert st.token_secret.name == "hf-token" and st.token_secret.optional
    assert (v.model.pvc.claim_name, v.model.pvc.mount_path, v.model.name) == ("llm1-weights", "/models", "/models/qwen/7b")


def test_values_existing_claim_and_s3() -> None:
    p = plan(stage="pvc:fsx-models", model_source="/fsx/qwen")
    v = build_values(p, ValuesOptions(pvc_mount_path="/fsx"))
    assert (v.staging.pvc.claim_name, v.staging.pvc.create, v.staging.pvc.path) == ("fsx-models", False, "qwen")
    assert v.model.pvc.claim_name == "fsx-models"
    p = plan(stage="s3://models-bucket/qwen/", model_source="s3://models-bucket/qwen")
    v = build_values(p, ValuesOptions(hf_token_secret=None))
    assert v.staging.target == "s3" and v.staging.s3_uri == "s3://models-bucket/qwen" == v.model.name
    assert v.staging.token_secret.name == "" and not v.staging.pvc.claim_name


@pytest.mark.parametrize("args, needles", [
    (["--stage", "ftp://x"], ["--stage 'ftp://x'", "s3://BUCKET/PREFIX", "pvc:CLAIM"]),
    (["--stage", "pvc:Bad_Claim"], ["--stage 'pvc:Bad_Claim'"]),
    (["--stage", "s3://a"], ["--stage 's3://a'", "valid bucket name"]),
    (["--stage", "s3://models-bucket/q"], ["--stage s3://models-bucket/q", "--model-source s3://models-bucket/q"]),
    (["--stage", "pvc"], ["--stage pvc needs --model-source /models/<dir>"]),
    (["--stage-revision", "v1"], ["--stage-revision: only with --stage"]),
    (["--stage-bandwidth-mib-s", "10"], ["--stage-bandwidth-mib-s: only with --stage"]),
])
def test_plan_errors_name_the_flags(cli, args, needles) -> None:
    one_line_error(cli("plan", *BASE, *args), *needles)


def test_local_config_has_no_repo_to_stage(cli, tmp_path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "num_hidden_layers": 24,
                                   "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
                                   "vocab_size": 151936, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}))
    one_line_error(cli("plan", "--model", str(cfg), "--instance", "g6.xlarge", "--model-source", "/models/x",
                       "--stage", "pvc"), "--stage copies a Hugging Face repo", "--model")


@pytest.mark.parametrize("args, needles", [
    (["--stage", "pvc:abc", "--pvc-name", "def", "--model-source", "/models/q"],
     ["--stage pvc:abc and --pvc-name def name two claims"]),
    (["--stage", "pvc", "--model-source", "/data/q"], ["--model-source (/data/q)", "--pvc-mount-path (/models)"]),
])
def test_values_errors_name_the_flags(cli, tmp_path, args, needles) -> None:
    one_line_error(cli("values", *BASE, "--out", str(tmp_path / "out"), *args), *needles)


def test_plan_json_round_trip_keeps_the_staging_section() -> None:
    from vllm_eks.spec.plan import Plan
    p = plan(stage="pvc:fsx-models", model_source="/fsx/qwen", stage_revision="v1.0")
    back = Plan.from_summary(p.json_summary())
    assert back.staging.model_dump() == p.staging.model_dump() and back.staging.staging_revision == "v1.0"


def test_plan_summary_names_the_staging_job(cli) -> None:
    r = cli("plan", *BASE, "--stage", "pvc", "--model-source", "/models/qwen")
    assert r.exit_code == 0 and "staging Job" in r.stdout and "Qwen/Qwen2.5-7B-Instruct@main" in r.stdout, r.stdout

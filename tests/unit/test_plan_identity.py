"""check-fit refuses a plan.json that is not the plan of the values beside it: its DaemonSet reserve,
node figures and quota bucket would be another scenario's (generator/vllm_eks/check/plan_identity.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.harness.paths import VALUES
from tests.unit.cli_result import one_line_error
from vllm_eks.check.plan_identity import disagreements

SMALL = VALUES / "llama-3.1-8b-g6e-xlarge"
DISAGG = VALUES / "qwen3-8b-g6-8xlarge-disaggregated"
LWS = VALUES / "deepseek-v3-p5-48xlarge-lws"


@pytest.fixture
def no_render(monkeypatch):
    """The identity check runs before helm: the fit itself is not what these tests look at."""
    from vllm_eks.check import scheduling as fit
    monkeypatch.setattr(fit, "check_fit", lambda *a, **k: [])


def _folder(tmp_path: Path, values_from: Path, plan_from: Path) -> Path:
    folder = tmp_path / "scenario"
    shutil.copytree(values_from, folder)
    shutil.copy(plan_from / "plan.json", folder / "plan.json")
    return folder


@pytest.mark.parametrize("scenario", sorted(p.parent for p in VALUES.glob("*/plan.json")), ids=lambda p: p.name)
def test_every_committed_plan_is_its_folders(scenario: Path) -> None:
    assert disagreements(json.loads((scenario / "plan.json").read_text()), scenario) == []


@pytest.mark.parametrize("values_from, plan_from, named", [
    (SMALL, DISAGG, ["topology: plan.json has disaggregated, vllm-inference.yaml topology is single-node",
                     "served model name: plan.json has Qwen/Qwen3-8B",
                     "instance type: plan.json was sized for g6.8xlarge, the pool llm-vllm-g6e-xlarge of "
                     "gpu-infra.yaml launches g6e.xlarge"]),
    (LWS, VALUES / "llama-3.1-405b-p5-48xlarge-lws", ["model: plan.json has meta-llama/Llama-3.1-405B-Instruct"]),
    (VALUES / "llama-3.1-70b-p5-48xlarge", VALUES / "gpt-oss-120b-p5-48xlarge",
     ["tensor parallel size: plan.json has 1, vllm-inference.yaml engine.tensorParallelSize is 8"]),
])
def test_check_fit_refuses_another_scenarios_plan(cli, tmp_path, no_render, values_from, plan_from, named) -> None:
    folder = _folder(tmp_path, values_from, plan_from)
    err = one_line_error(cli("check-fit", str(folder)), f"{folder / 'plan.json'}: not the plan these values were "
                                                        "written from", "run `vllm-eks values` again", *named)
    assert "EC2 vCPU quota" not in err


def test_quota_is_not_checked_against_another_scenarios_bucket(cli, tmp_path, no_render) -> None:
    """A P-instance plan beside G-instance values: --quota must not pass on the P bucket's figures."""
    folder = _folder(tmp_path, SMALL, VALUES / "llama-3.1-70b-p5-48xlarge")
    one_line_error(cli("check-fit", str(folder), "--quota", "P=100000"), "not the plan these values were written from")


def test_tuned_values_keep_their_plan(cli, tmp_path, no_render) -> None:
    """A fork that only tunes the engine (max-model-len, max-num-seqs, replicas) is the same scenario."""
    folder = _folder(tmp_path, SMALL, SMALL)
    values = yaml.safe_load((folder / "vllm-inference.yaml").read_text())
    values["engine"]["maxModelLen"] = 4096
    values["engine"]["maxNumSeqs"] = 8
    values["replicas"] = 3
    (folder / "vllm-inference.yaml").write_text(yaml.safe_dump(values))
    r = cli("check-fit", str(folder))
    assert r.exit_code == 0, r.stderr


def test_an_unreadable_values_file_is_one_line(cli, tmp_path, no_render) -> None:
    folder = _folder(tmp_path, SMALL, SMALL)
    (folder / "vllm-inference.yaml").write_bytes(b"topology: [unclosed\n")
    one_line_error(cli("check-fit", str(folder)), "vllm-inference.yaml: not a readable YAML values file")

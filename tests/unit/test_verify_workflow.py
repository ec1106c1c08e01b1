"""The reusable workflow .github/workflows/verify-values.yaml cannot run here (no GitHub
runner); what it calls is checked instead: every `vllm-eks verify` flag it passes is an option of
the command, every `${{ inputs.X }}` is a declared input, and the CRD fetch names a real
subcommand and flag of tools/fetch-crds.py."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import yaml

from tests.harness.paths import ROOT
from vllm_eks.cli.verify import verify

WORKFLOW = ROOT / ".github" / "workflows" / "verify-values.yaml"


def _doc() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    # PyYAML reads the bare key `on` as the boolean True
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def _runs() -> list[str]:
    return [step["run"] for job in _doc()["jobs"].values() for step in job["steps"] if "run" in step]


def _verify_flags() -> set[str]:
    return {opt for param in verify.params for opt in param.opts if opt.startswith("--")}


def test_it_is_a_reusable_workflow_with_the_documented_inputs() -> None:
    inputs = _doc()["on"]["workflow_call"]["inputs"]
    assert {"values-path", "vllm-eks-version", "vllm-eks-wheel", "helm-version", "crds-path"} <= set(inputs)
    used = set(re.findall(r"inputs\.([\w-]+)", WORKFLOW.read_text()))
    assert used <= set(inputs), f"undeclared inputs: {used - set(inputs)}"
    assert set(inputs) <= used, f"declared but unused: {set(inputs) - used}"


def test_the_verify_command_it_runs_names_real_flags() -> None:
    calls = [line for run in _runs() for line in run.splitlines() if line.strip().startswith("vllm-eks verify")]
    assert calls, "the workflow runs no `vllm-eks verify`"
    flags = _verify_flags()
    for call in calls:
        used = {w for w in shlex.split(call.replace('"${require[@]}"', "")) if w.startswith("--")}
        assert used and used <= flags, f"{call!r}: unknown flags {used - flags}"
    assert any("--require-promtool" in run for run in _runs())
    assert "--require-promtool" in flags


def test_the_crd_fetch_it_runs_exists() -> None:
    (call,) = [line for run in _runs() for line in run.splitlines() if "fetch-crds.py" in line]
    words = shlex.split(call)
    script = words.index(".vllm-eks-project/tools/fetch-crds.py")
    sub, flag = words[script + 1], words[script + 2]
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "fetch-crds.py"), sub, "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert flag in out.stdout

"""`vllm-eks verify DIR...`: the project's checks on values folders. Every committed scenario
passes every check; a broken copy fails the check that owns the problem, naming the values file
and the key or object. Each case is one run over a tree of folders, so helm renders stay few."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.harness.paths import CHARTS, VALUES
from tests.harness.tools import require_tool
from vllm_eks.verify import crd_schema
from vllm_eks.verify.folders import VALUES_FILES
from vllm_eks.verify.run import FAIL, SKIPPED, Check, Tools, _rules

EXE = str(Path(sys.executable).with_name("vllm-eks"))
SCENARIOS = sorted(p for p in VALUES.iterdir() if (p / "plan.json").is_file())
SAMPLE = VALUES / "qwen2.5-7b-g6-xlarge"

pytestmark = pytest.mark.render


def _verify(*args: str | Path, crds: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [EXE, "verify", *map(str, args), "--charts", str(CHARTS), "--helm", str(require_tool("helm4")),
           "--promtool", str(require_tool("promtool")), "--require-promtool"]
    if crds is not None:
        cmd += ["--crds", str(crds)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def _lines(stdout: str, folder: Path, status: str) -> dict[str, str]:
    """check name -> detail of the lines of one folder with that status."""
    out = {}
    for line in stdout.splitlines():
        head, _, detail = line.partition(": ")
        parts = head.split(maxsplit=2)
        if len(parts) == 3 and parts[0] == status and parts[1] == str(folder):
            out[parts[2]] = detail
    return out


def _edit(path: Path, change) -> None:  # noqa: ANN001
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_every_committed_scenario_passes_every_check() -> None:
    r = _verify(VALUES)
    assert r.returncode == 0, r.stdout + r.stderr
    for folder in SCENARIOS:
        files = sum((folder / name).is_file() for name in VALUES_FILES)
        ok = _lines(r.stdout, folder, "ok")
        # helm lint and strict schemas per values file, check-fit and promtool once
        assert len(ok) == 2 * files + 2, f"{folder.name}: {sorted(ok)}"
        assert "promtool" in ok and "check-fit" in ok
    assert f"{len(SCENARIOS)} folder(s)" in r.stdout and "0 failed, 0 skipped" in r.stdout


def test_broken_copies_fail_naming_file_and_key(tmp_path: Path) -> None:
    tree = tmp_path / "values"
    wrong_type, too_big = tree / "wrong-type", tree / "too-big"
    for folder in (wrong_type, too_big):
        shutil.copytree(SAMPLE, folder)

    def string_replicas(doc: dict) -> None:
        doc["replicas"] = "two"

    def bad_alert_label(doc: dict) -> None:
        doc["rules"]["additionalAlertLabels"] = {"team-name": "ml"}  # '-' is no label-name character

    def huge_memory(doc: dict) -> None:
        doc["resources"]["requests"]["memory"] = doc["resources"]["limits"]["memory"] = "900Gi"

    _edit(wrong_type / "vllm-inference.yaml", string_replicas)
    _edit(wrong_type / "observability.yaml", bad_alert_label)
    _edit(too_big / "vllm-inference.yaml", huge_memory)

    r = _verify(tree)
    assert r.returncode == 1, r.stdout + r.stderr
    failed = _lines(r.stdout, wrong_type, FAIL)
    assert "/replicas" in failed["helm lint vllm-inference.yaml"]
    assert "vllm-inference.yaml" in failed["helm template vllm-inference.yaml"]
    assert "invalid label name: team-name" in failed["promtool"]
    assert "PrometheusRule/" in failed["promtool"]
    assert "check-fit" in _lines(r.stdout, wrong_type, SKIPPED)  # nothing to fit without the server's render
    failed = _lines(r.stdout, too_big, FAIL)
    assert list(failed) == ["check-fit"], r.stdout
    assert "memory request 900.0 GiB exceeds" in failed["check-fit"]
    assert "2 folder(s), 16 checks: 4 failed, 1 skipped" in r.stdout


def test_object_invalid_against_a_crd_fails_naming_it(tmp_path: Path) -> None:
    """The committed values render a NodePool of weight 10; a CRD that allows at most 5 must
    reject it, naming the object, the field, the CRD and the values file."""
    crds = tmp_path / "crds"
    shutil.copytree(crd_schema.crd_dir_from_env(), crds)
    nodepools = crds / "karpenter.sh_nodepools.yaml"

    def weight_at_most_5(doc: dict) -> None:
        for version in doc["spec"]["versions"]:
            version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["weight"]["maximum"] = 5

    _edit(nodepools, weight_at_most_5)
    folder = tmp_path / "infra-only"
    folder.mkdir()
    shutil.copy(SAMPLE / "gpu-infra.yaml", folder)
    r = _verify(folder, crds=crds)
    assert r.returncode == 1, r.stdout + r.stderr
    detail = _lines(r.stdout, folder, FAIL)["schemas gpu-infra.yaml"]
    assert "rendered from gpu-infra.yaml" in detail and "NodePool/" in detail
    assert "spec.weight" in detail and "karpenter.sh_nodepools.yaml" in detail


@pytest.mark.parametrize("make, expected", [
    (lambda tmp: tmp / "absent", "no such folder"),
    (lambda tmp: tmp, "no values files in it or in its sub-folders"),
    (lambda tmp: (tmp / "gpu-infra.yaml").touch() or (tmp / "gpu-infra-old.yaml").touch() or tmp,
     "gpu-infra-old.yaml names no chart"),
], ids=["missing", "empty", "unknown-file"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, make, expected: str) -> None:  # noqa: ANN001
    r = _verify(make(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and expected in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_rules_without_promtool_are_skipped_or_failed_never_passed() -> None:
    rendered = {"observability": [{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                                   "metadata": {"name": "r"}, "spec": {"groups": []}}]}
    tools = Tools(charts=CHARTS, crds=crd_schema.load_crds(), promtool=None)
    skipped = _rules(SAMPLE, rendered, tools)
    assert skipped.status == SKIPPED and "promtool not found" in skipped.detail
    strict = _rules(SAMPLE, rendered, Tools(charts=CHARTS, crds=tools.crds, promtool=None, require_promtool=True))
    assert strict == Check(SAMPLE, "promtool", FAIL, skipped.detail)


def test_promtool_names_the_rule_of_a_broken_expression() -> None:
    """No values key reaches an expression unchecked (the chart validates podRegex and types the
    thresholds), so the expression is broken in a rendered object directly."""
    from vllm_eks.verify.rules import check_rules

    rule = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "forked"},
            "spec": {"groups": [{"name": "g", "rules": [
                {"alert": "Fine", "expr": "up == 0"},
                {"alert": "Broken", "expr": "sum(rate(vllm:num_requests_waiting[5m]) by"}]}]}}
    (problem,) = check_rules([rule], str(require_tool("promtool")))
    assert problem.startswith("PrometheusRule/forked: ") and '"Broken"' in problem and "parse error" in problem

"""`vllm-eks check-fit DIR`: exit 0 when the model-server pods fit the folder's pools, 1 with
the mismatch otherwise."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.harness.paths import VALUES
from tests.harness.tools import require_tool

EXE = str(Path(sys.executable).with_name("vllm-eks"))
SCENARIOS = sorted(p for p in VALUES.iterdir() if (p / "plan.json").exists())

pytestmark = pytest.mark.render


def _run(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, "check-fit", str(folder), "--helm", str(require_tool("helm4"))],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_committed_scenarios_fit(scenario):
    r = _run(scenario)
    assert r.returncode == 0, r.stderr
    assert "EC2 vCPU quota, " in r.stdout and " vCPUs (min / max / upgrade peak; NodePool limit " in r.stdout


def test_pool_label_mismatch_exits_1(tmp_path):
    folder = tmp_path / "broken"
    shutil.copytree(SCENARIOS[0], folder)
    infra = yaml.safe_load((folder / "gpu-infra.yaml").read_text())
    infra["pools"][0]["name"] = "some-other-pool"
    (folder / "gpu-infra.yaml").write_text(yaml.safe_dump(infra))
    r = _run(folder)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and r.stderr.strip()


# a type the catalog lacks (a family after it): check-fit cannot fall back on a catalog row
CUSTOM = ["--model", "llama-3.1-8b-instruct", "--gpu-memory-mib", "46068", "--gpus-per-node", "1",
          "--hardware-name", "g8.2xlarge"]


def test_custom_hardware_fits_by_the_figures_its_plan_recorded(tmp_path):
    """Hardware outside the catalog: check-fit sizes its nodes from plan.json's `hardware`
    (custom hardware with --vcpus/--memory-gib); without those figures it says which flags."""
    sized, unsized = tmp_path / "sized", tmp_path / "unsized"
    for out, extra in ((sized, ["--vcpus", "8", "--memory-gib", "64"]), (unsized, [])):
        subprocess.run([EXE, "values", *CUSTOM, *extra, "--out", str(out)], check=True, capture_output=True, timeout=120)
    r = _run(sized)
    assert r.returncode == 0, r.stderr
    assert "G bucket: 8 / 32 / 32 vCPUs" in r.stdout
    r = _run(unsized)
    assert r.returncode == 1 and "plan.json has no node figures for it (plan it with --vcpus and --memory-gib" in r.stderr


def test_autoscaled_workloads_are_checked_at_the_autoscalers_maximum(tmp_path):
    """The chart leaves an autoscaled Deployment's replica count to KEDA; check-fit sizes it at
    the ScaledObject's maxReplicaCount, so a pool that could hold only the first pods fails."""
    folder = tmp_path / "scaled"
    shutil.copytree(VALUES / "qwen2.5-7b-g6-xlarge", folder)
    obs = yaml.safe_load((folder / "observability.yaml").read_text())
    assert obs["autoscaling"]["enabled"]
    limit = yaml.safe_load((folder / "gpu-infra.yaml").read_text())["pools"][0]["gpuLimit"]
    obs["autoscaling"]["maxReplicaCount"] = int(limit) + 1
    (folder / "observability.yaml").write_text(yaml.safe_dump(obs))
    r = _run(folder)
    assert r.returncode == 1, r.stdout
    assert "NodePool limits nvidia.com/gpu" in r.stderr and "Traceback" not in r.stderr

"""The generator as users install it: `make dist` builds the wheel and the sdist, the wheel goes
into an empty venv (pip resolves its dependencies from the package index), and the README's
"Size your own model" commands run from that venv in a folder outside the checkout, as written
but for the venv's path. Nothing points back into the repository: VLLM_EKS_CHARTS_DIR is unset,
the working directory is a temporary one, and `check-fit` renders with the charts the wheel
carries. The Hub repos the commands name are the unit tier's stand-ins (tests/harness/fake_hub.py)
on HF_ENDPOINT; `./my-model/config.json` is one of their configs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.build_lock import source_tree_build
from tests.harness.fake_hub import FakeHub, serve
from tests.harness.paths import ROOT
from tests.harness.readme_blocks import argv, blocks, commands
from tests.harness.tools import require_tool
from tests.unit.hub_checkpoints import config_path, fake_repo, repos
from vllm_eks.check.charts_source import CHARTS, CHARTS_ENV

pytestmark = pytest.mark.package

README_VENV = ".venv/bin/"            # what the README's commands run the CLI from
MY_MODEL = "mistralai/Mistral-Small-24B-Instruct-2501"   # the stand-in config behind ./my-model


@dataclass(frozen=True)
class Installed:
    wheel: Path
    sdist: Path
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("dist")
    with source_tree_build():
        _run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "dist", f"DIST_DIR={base / 'dist'}"])
    wheels = sorted((base / "dist").glob("vllm_eks-*.whl"))
    sdists = sorted((base / "dist").glob("vllm_eks-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in (base / "dist").iterdir())
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "pip"), "install", "--quiet", str(wheels[0])])
    return Installed(wheels[0], sdists[0], venv)


def test_wheel_carries_the_charts_catalogs_and_templates(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    for chart in CHARTS:
        for part in ("Chart.yaml", "values.yaml", "values.schema.json"):
            assert f"vllm_eks/_charts/{chart}/{part}" in names, (chart, part)
        assert any(n.startswith(f"vllm_eks/_charts/{chart}/templates/") for n in names), chart
        # the chart's own CI scenarios stay out, as .helmignore keeps them out of `helm package`
        assert not any(n.startswith(f"vllm_eks/_charts/{chart}/ci/") for n in names), chart
    assert any(n.startswith("vllm_eks/catalog/data/") for n in names)
    assert any(n.startswith("vllm_eks/output/templates/") for n in names)
    # every file of the charts' templates is in the wheel, byte for byte
    wheel = zipfile.ZipFile(installed.wheel)
    for chart in CHARTS:
        for f in (ROOT / "charts" / chart / "templates").rglob("*"):
            if f.is_file():
                name = f"vllm_eks/_charts/{chart}/templates/{f.relative_to(ROOT / 'charts' / chart / 'templates')}"
                assert wheel.read(name) == f.read_bytes(), name


def test_sdist_carries_the_charts(installed: Installed) -> None:
    names = tarfile.open(installed.sdist).getnames()
    top = names[0].split("/")[0]
    for chart in CHARTS:
        assert f"{top}/charts/{chart}/Chart.yaml" in names, chart
    assert f"{top}/setup.py" in names and f"{top}/pyproject.toml" in names


def test_installed_package_is_not_the_checkout(installed: Installed, tmp_path: Path) -> None:
    proc = _run([str(installed.bin / "python"), "-c",
                 "import vllm_eks, vllm_eks.check.charts_source as c; print(vllm_eks.__file__); print(c.bundled_charts())"],
                cwd=tmp_path, env=_clean_env(tmp_path))
    module, charts = proc.stdout.split()
    assert Path(module).is_relative_to(installed.venv), module
    assert Path(charts).is_relative_to(installed.venv), charts


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in (CHARTS_ENV, "PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("HF_")}
    helm = require_tool("helm4")
    env.update(PATH=os.pathsep.join([str(helm.parent), env.get("PATH", "")]), VLLM_EKS_HELM=str(helm),
               HF_HOME=str(home / "hf-home"), VLLM_EKS_HUB_CACHE=str(home / "hf-home" / "vllm-eks"))
    return env


@pytest.fixture(scope="module")
def hub_endpoint():
    server, endpoint = serve(FakeHub({r: fake_repo(r) for r in repos()}))
    yield endpoint
    server.shutdown()


def test_readme_sizing_commands_run_from_the_wheel(installed: Installed, hub_endpoint: str, tmp_path: Path) -> None:
    steps = commands(blocks()["sizing:commands"])
    assert steps and all(s.startswith(README_VENV + "vllm-eks ") for s in steps), steps
    (tmp_path / "my-model").mkdir()
    shutil.copy(config_path(MY_MODEL), tmp_path / "my-model" / "config.json")
    env = {**_clean_env(tmp_path), "HF_ENDPOINT": hub_endpoint}
    outputs: dict[str, str] = {}
    for step in steps:
        cmd = argv(step)
        cmd[0] = str(installed.bin / "vllm-eks")
        outputs[step] = _run(cmd, cwd=tmp_path, env=env).stdout
        print(f"$ {step}\n{outputs[step][:400]}")
    values = next(argv(s) for s in steps if argv(s)[1] == "values")
    folder = tmp_path / values[values.index("--out") + 1]
    assert {p.name for p in folder.iterdir()} >= {"gpu-infra.yaml", "vllm-inference.yaml", "observability.yaml",
                                                  "plan.json", "README.md"}
    # check-fit from the wheel renders the folder with the charts the wheel carries
    proc = _run([str(installed.bin / "vllm-eks"), "check-fit", str(folder)], cwd=tmp_path, env=env)
    assert "every model-server pod fits its GPU pool" in proc.stdout, proc.stdout


def test_check_fit_from_the_wheel_names_a_wrong_charts_folder(installed: Installed, tmp_path: Path) -> None:
    folder = ROOT / "values" / "qwen2.5-7b-g6-xlarge"
    proc = subprocess.run([str(installed.bin / "vllm-eks"), "check-fit", str(folder), "--charts", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, env=_clean_env(tmp_path), timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and "--charts" in line and "vllm-inference/Chart.yaml" in line, line

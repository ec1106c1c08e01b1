"""The pinned tools are installed, at exactly the pinned versions."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

from tests.harness import KUBE_VERSIONS, helm, k8s_schema
from tests.harness.paths import ROOT
from tests.harness.tools import require_tool

TOOLS_MK = ROOT / "mk" / "tools.mk"


def _make_var(name: str) -> str:
    match = re.search(rf"^{name}\s*:=\s*(\S+)", TOOLS_MK.read_text(), re.MULTILINE)
    assert match, f"{name} not set in {TOOLS_MK}"
    return match.group(1)


@pytest.mark.render
def test_helm_versions_are_exactly_the_pins(helm_version: str) -> None:
    short = helm.version(helm_version)
    pinned = helm.PINNED_VERSIONS[helm_version]
    assert short.split("+")[0] == pinned, f"{helm_version} is {short}, pinned {pinned}"
    assert pinned == _make_var(f"HELM{helm_version[-1]}_VERSION")


@pytest.mark.render
def test_plain_helm_is_helm4() -> None:
    path = require_tool("helm")
    out = subprocess.run([str(path), "version", "--short"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(helm.PINNED_VERSIONS["helm4"] + "+")


@pytest.mark.render
def test_checkov_is_the_pinned_version() -> None:
    # Read the installed distribution's metadata: `checkov --version` takes seconds to import.
    binary = Path(require_tool("checkov")).resolve()
    venv = binary.parent.parent
    assert venv.name == "checkov-venv", f"checkov must run from its own venv, found {binary}"
    pinned = _make_var("CHECKOV_VERSION")
    installed = [p.name for p in venv.glob("lib/python*/site-packages/checkov-*.dist-info")]
    assert installed == [f"checkov-{pinned}.dist-info"], installed


@pytest.mark.render
def test_promtool_runs() -> None:
    out = subprocess.run([str(require_tool("promtool")), "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.match(r"promtool, version 2\.\d+", out.stdout + out.stderr)


@pytest.mark.parametrize(
    "module", ["pytest", "hypothesis", "jsonschema", "kubernetes_validate", "kubernetes",
               "pytest_helm_charts", "promql_parser", "yaml"]
)
def test_python_test_dependency_imports(module: str) -> None:
    importlib.import_module(module)


def test_kubernetes_validate_has_strict_schemas_for_every_minor() -> None:
    root = k8s_schema.schema_root()
    for version in KUBE_VERSIONS:
        folder = root / f"v{version}.0-local-strict"
        assert (folder / "_definitions.json").is_file(), f"no strict schemas for {version} in {root}"
        assert (folder / "deployment-apps-v1.json").is_file()


def test_missing_tool_error_says_run_make_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("VLLM_EKS_TOOLS", str(tmp_path))
    with pytest.raises(Exception, match="make setup"):
        require_tool("helm4")

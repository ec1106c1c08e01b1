"""Shared pytest set-up: the test harness import path, tool report, common fixtures.

Import the harness as `tests.harness` (the repository root is put on sys.path here). A missing
tool or CRD directory is a test error that says to run `make setup`, never a skip.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The one place the repository root is computed from a file's path before tests.harness.paths
# can be imported (which names it for everything else).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.harness import KUBE_VERSIONS, CrdRegistry, crd_schema, helm, load_crds  # noqa: E402
from tests.harness.paths import CHARTS  # noqa: E402
from tests.harness.summary import SECTIONS  # noqa: E402
from tests.harness.timing import TIMINGS  # noqa: E402
from tests.harness.tools import ToolMissingError  # noqa: E402
from vllm_eks.check.charts_source import CHARTS_ENV  # noqa: E402

# check-fit from the editable install renders the checkout's charts (the Makefile sets the same;
# tests/package runs the wheel, which carries its own, with this unset)
os.environ.setdefault(CHARTS_ENV, str(CHARTS))


def _helm_line(name: str) -> str:
    try:
        return f"{name}={helm.version(name)}"
    except (ToolMissingError, helm.HelmError) as exc:
        return f"{name}=MISSING ({str(exc).splitlines()[0]})"


def pytest_report_header(config: pytest.Config) -> list[str]:
    path = crd_schema.crd_dir_from_env()
    crd_dir = str(path) if path.is_dir() else f"{path} MISSING (set {crd_schema.CRD_DIR_ENV})"
    return [
        "helm: " + ", ".join(_helm_line(name) for name in helm.HELM_VERSIONS),
        f"CRD dir ({crd_schema.CRD_DIR_ENV}): {crd_dir}",
        "Kubernetes versions: " + ", ".join(KUBE_VERSIONS),
    ]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    if TIMINGS:
        terminalreporter.section("timings")
        for label, seconds in TIMINGS:
            terminalreporter.write_line(f"{seconds:8.2f} s  {label}")
    for title, lines in SECTIONS.items():
        terminalreporter.section(title)
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(params=sorted(helm.HELM_VERSIONS))
def helm_version(request: pytest.FixtureRequest) -> str:
    """'helm3' or 'helm4': the test runs once with each pinned Helm."""
    return request.param


@pytest.fixture(params=KUBE_VERSIONS)
def kube_version(request: pytest.FixtureRequest) -> str:
    """Each Kubernetes minor the charts support ('1.31' ... '1.35')."""
    return request.param


@pytest.fixture(scope="session")
def crd_dir() -> Path:
    """$VLLM_EKS_CRD_DIR (default ../shared/crds); an error, not a skip, when missing."""
    path = crd_schema.crd_dir_from_env()
    if not path.is_dir():
        raise crd_schema.CrdDirError(
            f"CRD directory {path} does not exist: set {crd_schema.CRD_DIR_ENV} "
            "(see `make crds`)"
        )
    return path


@pytest.fixture(scope="session")
def crd_registry(crd_dir: Path) -> CrdRegistry:
    return load_crds(crd_dir)

"""kind tier: runs only where a container engine runs (`make e2e-kind`, .github/workflows/kind.yaml).

Here there is no container engine, so every test marked `kind` is skipped with that reason
printed (pytest -ra). Nothing in this directory claims to pass without a kind cluster."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

KUBECONFIG_ENV = "VLLM_EKS_KIND_KUBECONFIG"


def container_engine() -> str | None:
    """The container engine kind would use, if one is installed and its daemon answers."""
    for engine in ("docker", "podman", "nerdctl"):
        path = shutil.which(engine)
        if not path:
            continue
        try:
            if subprocess.run([path, "info"], capture_output=True, timeout=20).returncode == 0:
                return engine
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:  # noqa: ARG001
    kind_items = [i for i in items if i.get_closest_marker("kind")]
    if not kind_items:
        return
    engine = container_engine()
    if engine is None:
        reason = ("no container engine runs here (docker/podman/nerdctl absent or not answering), so kind "
                  "cannot create a cluster; run `make e2e-kind` where one does (users' CI: "
                  ".github/workflows/kind.yaml)")
    elif not os.environ.get(KUBECONFIG_ENV):
        reason = f"{engine} runs but no kind cluster was given: run `make e2e-kind` (it sets {KUBECONFIG_ENV})"
    else:
        return
    for item in kind_items:
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def kind_kubeconfig() -> str:
    return os.environ[KUBECONFIG_ENV]

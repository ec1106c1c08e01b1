import json

import pytest
from click.testing import CliRunner

from vllm_eks.cli.main import main


@pytest.fixture(autouse=True)
def _no_hugging_face_hub(monkeypatch, tmp_path_factory):
    """No unit test reaches the real Hub: a repo id outside the catalog reads an empty cache of
    its own (HF_HUB_OFFLINE), unless a test points HF_ENDPOINT at the stand-in and unsets it."""
    home = tmp_path_factory.mktemp("hf-home")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("VLLM_EKS_HUB_CACHE", str(home / "vllm-eks"))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def cli():
    """Run `vllm-eks ARGS` in-process; returns click's Result (stdout and stderr apart)."""
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=True)
    return run


@pytest.fixture
def plan_json(cli):
    def run(*args: str) -> dict:
        r = cli("plan", *args, "--json")
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)
    return run

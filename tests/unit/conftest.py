import json

import pytest
from click.testing import CliRunner

from vllm_eks.cli import main


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

"""The committed scenarios (values/scenarios.yaml): each entry's `vllm-eks values` arguments, run
through the CLI itself into a folder per scenario. `make values` (tools/gen_values.py) writes them
under values/; the unit tier writes them again and compares."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml
from click.testing import CliRunner

from vllm_eks.cli.main import main as cli


class ScenarioError(RuntimeError):
    """A scenario's `vllm-eks values` command failed."""


def scenarios(scenarios_file: Path) -> dict[str, dict]:
    """name -> entry (`args`, `purpose`) of scenarios_file, in file order."""
    return yaml.safe_load(scenarios_file.read_text())["scenarios"]


def generate(scenarios_file: Path, out_root: Path) -> list[str]:
    """Write every scenario of scenarios_file under out_root/<name>; return the names in order."""
    names = []
    for name, sc in scenarios(scenarios_file).items():
        argv = ["values", *shlex.split(sc["args"]), "--out", str(out_root / name)]
        r = CliRunner().invoke(cli, argv, prog_name="vllm-eks")
        if r.exit_code != 0:
            raise ScenarioError(f"scenario {name}: vllm-eks {' '.join(argv)} failed: {r.stderr.strip()}")
        names.append(name)
    return names

"""Regenerate the committed scenarios (values/scenarios.yaml) with the CLI, or check them.

  gen_values.py OUT_ROOT      write every scenario under OUT_ROOT/<name>
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

from vllm_eks.cli.main import main as cli

ROOT = Path(__file__).resolve().parents[1]


def scenarios() -> dict[str, dict]:
    return yaml.safe_load((ROOT / "values" / "scenarios.yaml").read_text())["scenarios"]


def generate(out_root: Path) -> list[str]:
    names = []
    for name, sc in scenarios().items():
        argv = ["values", *shlex.split(sc["args"]), "--out", str(out_root / name)]
        r = CliRunner().invoke(cli, argv, prog_name="vllm-eks")
        if r.exit_code != 0:
            raise SystemExit(f"scenario {name}: vllm-eks {' '.join(argv)} failed: {r.stderr.strip()}")
        names.append(name)
    return names


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "values"
    for n in generate(out):
        print(f"{out / n}")

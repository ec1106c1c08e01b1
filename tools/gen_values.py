"""Regenerate the committed scenarios (values/scenarios.yaml) with the CLI, or check them.

  gen_values.py OUT_ROOT      write every scenario under OUT_ROOT/<name>

The scenarios are written by vllm_eks.cli.scenarios; this is its command line.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.harness.paths

from tests.harness.paths import SCENARIOS_FILE, VALUES  # noqa: E402
from vllm_eks.cli.scenarios import ScenarioError, generate  # noqa: E402

if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else VALUES
    try:
        names = generate(SCENARIOS_FILE, out)
    except ScenarioError as e:
        raise SystemExit(str(e)) from None
    for n in names:
        print(f"{out / n}")

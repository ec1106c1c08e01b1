"""The README's generated blocks (example plan, scenario list) match the tools' output."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import update_readme  # noqa: E402


def test_readme_generated_blocks_are_current():
    current = (ROOT / "README.md").read_text()
    assert update_readme.render(current) == current, "README.md is stale: run `make docs`"


def test_readme_states_the_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    assert "make render" in readme and "make test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\nmake test\n" in ci

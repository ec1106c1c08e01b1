"""The Makefile's entry points: every test is in exactly one tier, and `make help` lists every
target."""

from __future__ import annotations

import re
import subprocess

from tests.harness.paths import ROOT
from tests.harness.tiers import collect, make_tiers, parse_args

MAKEFILES = [ROOT / "Makefile", *sorted((ROOT / "mk").glob("*.mk"))]


def test_every_test_is_in_exactly_one_tier() -> None:
    tiers = make_tiers()
    assert {t.name for t in tiers} >= {"unit", "render", "cluster", "engine", "kind"}
    items = collect()
    assert len(items) > 1000, f"only {len(items)} tests collected"
    wrong = {}
    for nodeid, markers in items.items():
        selected = [t.name for t in tiers if t.selects(nodeid, markers)]
        if len(selected) != 1:
            wrong[nodeid] = selected
    assert not wrong, (
        f"{len(wrong)} tests are not in exactly one tier (tier args: `make test-tiers`), e.g.:\n"
        + "\n".join(f"  {k}: {v or 'no tier'}" for k, v in sorted(wrong.items())[:20]))


def test_tier_selection_logic() -> None:
    unit = parse_args("unit", ["-m", "not (render or cluster)", "tests/unit"])
    assert unit.selects("tests/unit/test_a.py::test_x", {"parametrize"})
    assert not unit.selects("tests/unit/test_a.py::test_x", {"render"})
    assert not unit.selects("tests/unitx/test_a.py::test_x", set())
    assert parse_args("all", []).selects("tests/render/test_b.py::test_y", {"render"})


def _declared_targets() -> set[str]:
    rule = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", re.MULTILINE)
    return {name for mk in MAKEFILES for name in rule.findall(mk.read_text()) if not name.startswith(".")}


def test_make_help_lists_every_target_once() -> None:
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "help"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    listed = [re.match(r"make (\S+)\s+(\S.*)$", line) for line in out.splitlines()]
    assert all(listed), out
    names = [m.group(1) for m in listed]
    assert sorted(names) == sorted(set(names)), f"listed twice: {sorted({n for n in names if names.count(n) > 1})}"
    assert set(names) == _declared_targets()
    for tier in ("test", "test-unit", "test-render", "test-cluster", "test-engine"):
        assert tier in names

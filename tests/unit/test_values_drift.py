"""The committed values/ scenarios are exactly what the generator writes today."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gen_values  # noqa: E402


def test_every_scenario_is_committed_and_up_to_date(tmp_path):
    names = gen_values.generate(tmp_path)
    assert len(names) >= 5
    stale = []
    for name in names:
        for fresh in sorted((tmp_path / name).iterdir()):
            committed = ROOT / "values" / name / fresh.name
            if not committed.exists() or committed.read_text() != fresh.read_text():
                stale.append(f"values/{name}/{fresh.name}")
    assert not stale, f"run `make values`: these differ from the generator's output: {stale}"


def test_no_folder_without_a_scenario_entry():
    known = set(gen_values.scenarios())
    folders = {p.name for p in (ROOT / "values").iterdir() if p.is_dir()}
    assert folders == known, f"folders without an entry in values/scenarios.yaml: {folders - known}"

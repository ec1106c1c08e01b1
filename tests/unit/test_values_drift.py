"""The committed values/ scenarios are exactly what the generator writes today."""

from tests.harness.paths import SCENARIOS_FILE, VALUES
from vllm_eks.cli import scenarios


def test_every_scenario_is_committed_and_up_to_date(tmp_path):
    names = scenarios.generate(SCENARIOS_FILE, tmp_path)
    assert len(names) >= 5
    stale = []
    for name in names:
        for fresh in sorted((tmp_path / name).iterdir()):
            committed = VALUES / name / fresh.name
            if not committed.exists() or committed.read_text() != fresh.read_text():
                stale.append(f"values/{name}/{fresh.name}")
    assert not stale, f"run `make values`: these differ from the generator's output: {stale}"


def test_no_folder_without_a_scenario_entry():
    known = set(scenarios.scenarios(SCENARIOS_FILE))
    folders = {p.name for p in VALUES.iterdir() if p.is_dir()}
    assert folders == known, f"folders without an entry in values/scenarios.yaml: {folders - known}"

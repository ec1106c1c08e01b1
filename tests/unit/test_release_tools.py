"""What the release workflow (.github/workflows/release.yaml) runs, short of the registry login and
`gh release`: the notes for a tag (tools/release_notes.py), the push step's refusals
(tools/push_charts.py), and that every make target and script the workflow names exists."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.harness.paths import ROOT, TOOLS


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


notes = _load("release_notes")
push = _load("push_charts")
WORKFLOW = ROOT / ".github" / "workflows" / "release.yaml"

CHANGELOG = """# Changelog

## Unreleased

- next things

## 0.2.0 (charts: vllm-inference 0.2.0)

- the second release

## 0.1.0

- the first
"""


def project(tmp_path: Path, version: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "{version}"\n')
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    return tmp_path


def test_notes_are_the_tagged_versions_section(tmp_path: Path) -> None:
    assert notes.notes_for_tag("v0.2.0", project(tmp_path, "0.2.0")) == "- the second release\n"
    assert notes.notes_for_tag("v0.1.0", project(tmp_path, "0.1.0")) == "- the first\n"


@pytest.mark.parametrize("tag, version, message", [
    ("0.2.0", "0.2.0", "expected vMAJOR.MINOR.PATCH"),
    ("v0.3.0", "0.2.0", "pyproject.toml's version is 0.2.0"),
    ("v0.3.0", "0.3.0", "no '## 0.3.0' section"),
])
def test_a_tag_that_is_not_the_release_is_refused_in_one_line(tmp_path: Path, tag: str, version: str, message: str) -> None:
    with pytest.raises(notes.ReleaseError, match=re.escape(message)) as e:
        notes.notes_for_tag(tag, project(tmp_path, version))
    assert "\n" not in str(e.value)


def test_push_refuses_a_registry_that_is_not_oci_and_a_missing_package(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        push.main(["--registry", "https://ghcr.io/x", str(tmp_path / "a.tgz")])
    assert "expected oci://HOST[/PATH]" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        push.main(["--registry", "oci://ghcr.io/x/charts", str(tmp_path / "missing.tgz")])
    assert "run `make package` first" in capsys.readouterr().err


def _workflow_runs() -> list[str]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    return [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]


def test_every_make_target_and_script_the_workflow_runs_exists() -> None:
    runs = "\n".join(_workflow_runs())
    targets = {t for m in re.finditer(r"\bmake ([a-z][a-z0-9 -]*?)(?:$|\s+[A-Z_]+=)", runs, re.M)
               for t in m.group(1).split()}
    assert {"package", "dist", "push-charts"} <= targets, targets
    for target in targets:
        proc = subprocess.run(["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True)
        assert proc.returncode == 0, f"release.yaml runs `make {target}`: {proc.stderr.strip()}"
    for script in re.findall(r"(tools/[\w./-]+\.py)", runs):
        assert (ROOT / script).is_file(), f"release.yaml runs {script}, which does not exist"


def test_the_checkouts_changelog_has_a_section_for_its_version() -> None:
    """The release names its CHANGELOG section by the CLI's version; until the release it is
    'Unreleased', with the version beside it."""
    version = notes.project_version(ROOT / "pyproject.toml")
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## (?:{re.escape(version)}|Unreleased)\b.*vllm-eks {re.escape(version)}", changelog, re.M)

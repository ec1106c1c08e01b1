"""The version-bump check (tools/check_chart_versions.py, `make check-versions`): a chart changed
since the target branch needs a higher Chart.yaml version; README and ci/ changes do not count;
a new chart needs none. Run on throw-away git repositories, then on this checkout against its
target branch when it has one."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from tests.harness.paths import ROOT, TOOLS

_spec = importlib.util.spec_from_file_location("check_chart_versions", TOOLS / "check_chart_versions.py")
ccv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ccv)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _chart(repo: Path, name: str, version: str) -> None:
    d = repo / "charts" / name
    (d / "templates").mkdir(parents=True, exist_ok=True)
    (d / "ci").mkdir(exist_ok=True)
    (d / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: {version}\n")
    (d / "templates" / "cm.yaml").write_text("kind: ConfigMap\n")
    (d / "values.yaml").write_text("a: 1\n")
    (d / "README.md").write_text("# demo\n")
    (d / "ci" / "01-values.yaml").write_text("a: 2\n")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    _git(tmp_path, "init", "-q", "-b", "main")
    _chart(tmp_path, "demo", "0.1.0")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    return tmp_path, _git(tmp_path, "rev-parse", "HEAD")


def test_template_change_without_bump_fails_naming_the_chart_and_file(repo) -> None:
    path, base = repo
    (path / "charts/demo/templates/cm.yaml").write_text("kind: ConfigMap\ndata: {}\n")
    ok, bad = ccv.check(path, base)
    assert len(bad) == 1 and not ok
    assert "charts/demo: templates/cm.yaml changed" in bad[0] and "0.1.0 is not higher than 0.1.0" in bad[0]
    assert "bump `version` in charts/demo/Chart.yaml" in bad[0]
    assert ccv.main(["--repo", str(path), "--base", base]) == 1


def test_values_change_with_a_bump_passes(repo) -> None:
    path, base = repo
    (path / "charts/demo/values.yaml").write_text("a: 3\n")
    chart = path / "charts/demo/Chart.yaml"
    chart.write_text(chart.read_text().replace("0.1.0", "0.2.0"))
    ok, bad = ccv.check(path, base)
    assert not bad and "version 0.1.0 -> 0.2.0" in ok[0]


def test_committed_change_and_a_new_file_count(repo) -> None:
    path, base = repo
    (path / "charts/demo/templates/new.yaml").write_text("kind: Secret\n")   # untracked
    assert ccv.check(path, base)[1]
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "change")
    assert ccv.check(path, base)[1]


def test_readme_and_ci_values_need_no_bump(repo) -> None:
    path, base = repo
    (path / "charts/demo/README.md").write_text("# demo, documented\n")
    (path / "charts/demo/ci/01-values.yaml").write_text("a: 9\n")
    ok, bad = ccv.check(path, base)
    assert not bad and "unchanged" in ok[0]


def test_new_chart_needs_no_bump_and_a_prerelease_is_lower(repo) -> None:
    path, base = repo
    _chart(path, "other", "0.1.0")
    ok, bad = ccv.check(path, base)
    assert not bad and any("charts/other: new" in line for line in ok)
    assert ccv.semver_key("1.0.0-rc.1") < ccv.semver_key("1.0.0") < ccv.semver_key("1.0.1")
    assert ccv.semver_key("1.0.0-alpha") < ccv.semver_key("1.0.0-alpha.1") < ccv.semver_key("1.0.0-beta")
    assert ccv.semver_key("0.10.0") > ccv.semver_key("0.9.9")


def test_a_version_that_is_not_semver_is_named(repo) -> None:
    path, base = repo
    (path / "charts/demo/values.yaml").write_text("a: 3\n")
    (path / "charts/demo/Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: v2\n")
    bad = ccv.check(path, base)[1]
    assert len(bad) == 1 and "charts/demo/Chart.yaml: version 'v2' is not a semver version" in bad[0]


def test_unknown_base_is_one_line(repo, capsys) -> None:
    path, _ = repo
    assert ccv.main(["--repo", str(path), "--base", "no-such-branch"]) == 2
    assert "--base no-such-branch: not a commit" in capsys.readouterr().err


def test_this_checkout_against_its_target_branch() -> None:
    """CI runs this in a clone whose origin/main is the target branch."""
    try:
        base = ccv.resolve_base(ROOT, None)
    except ccv.BaseError as e:
        pytest.skip(f"no target branch to compare this checkout with: {e}")
    ok, bad = ccv.check(ROOT, base)
    assert not bad, "\n".join(bad)
    assert len(ok) == len(list((ROOT / "charts").glob("*/Chart.yaml")))

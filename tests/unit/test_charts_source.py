"""Where check-fit finds its charts: --charts, then $VLLM_EKS_CHARTS_DIR, then the charts the
installed wheel carries; an editable install without either gets one line naming both."""

from __future__ import annotations

import pytest

from tests.harness.paths import CHARTS
from vllm_eks.check import charts_source
from vllm_eks.check.charts_source import CHARTS_ENV, ChartsNotFoundError, charts_dir


def test_explicit_folder_wins_over_the_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(CHARTS_ENV, str(tmp_path))
    assert charts_dir(CHARTS) == CHARTS


def test_environment_is_used_without_an_explicit_folder(monkeypatch) -> None:
    monkeypatch.setenv(CHARTS_ENV, str(CHARTS))
    assert charts_dir() == CHARTS


def test_a_folder_without_the_charts_names_what_is_missing(tmp_path) -> None:
    (tmp_path / "gpu-infra").mkdir()
    (tmp_path / "gpu-infra" / "Chart.yaml").write_text("name: gpu-infra\n")
    with pytest.raises(ChartsNotFoundError) as e:
        charts_dir(tmp_path)
    message = str(e.value)
    assert message.startswith("--charts: ") and "vllm-inference/Chart.yaml" in message
    assert "observability/Chart.yaml" in message and "gpu-infra/Chart.yaml" not in message


def test_editable_install_without_charts_says_how_to_name_them(monkeypatch) -> None:
    monkeypatch.delenv(CHARTS_ENV, raising=False)
    monkeypatch.setattr(charts_source, "bundled_charts", lambda: None)
    with pytest.raises(ChartsNotFoundError) as e:
        charts_dir()
    assert "--charts DIR" in str(e.value) and CHARTS_ENV in str(e.value) and "make dist" in str(e.value)


def test_bundled_charts_are_used_when_nothing_is_named(monkeypatch) -> None:
    monkeypatch.delenv(CHARTS_ENV, raising=False)
    monkeypatch.setattr(charts_source, "bundled_charts", lambda: CHARTS)
    assert charts_dir() == CHARTS


def test_check_fit_cli_names_a_wrong_charts_folder(cli, tmp_path) -> None:
    from tests.harness.paths import ROOT
    r = cli("check-fit", str(ROOT / "values" / "qwen2.5-7b-g6-xlarge"), "--charts", str(tmp_path))
    assert r.exit_code == 1 and "--charts" in r.stderr and "vllm-inference/Chart.yaml" in r.stderr, r.stderr


def test_check_fit_warns_in_one_line_for_values_of_another_chart_version(cli, tmp_path) -> None:
    import shutil

    from tests.harness.paths import ROOT
    folder = tmp_path / "folder"
    shutil.copytree(ROOT / "values" / "qwen2.5-7b-g6-xlarge", folder)
    values = folder / "vllm-inference.yaml"
    values.write_text(values.read_text().replace("writtenForChartVersion: 0.1.0", "writtenForChartVersion: 0.0.7"))
    r = cli("check-fit", str(folder))
    assert r.exit_code == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "vllm-inference.yaml was written for vllm-inference 0.0.7, the chart is 0.1.0" \
        in warnings[0], r.stderr
    assert "gpu-infra.yaml" not in warnings[0]
    assert "warning" not in cli("check-fit", str(ROOT / "values" / "qwen2.5-7b-g6-xlarge")).stderr

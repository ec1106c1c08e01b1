"""check-fit with a --helm that fails or prints something other than a rendered chart: one
line naming the chart, the values file and what went wrong (helm's own multi-line error cut
to its first meaningful line plus where to read the rest), never a traceback or a pass."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.unit.cli_result import one_line_error

M8 = ["--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge"]


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    from click.testing import CliRunner

    from vllm_eks.cli.main import main

    out = tmp_path_factory.mktemp("scenario") / "s"
    r = CliRunner().invoke(main, ["values", *M8, "--out", str(out)])
    assert r.exit_code == 0, r.stderr
    return out


def _fake_helm(tmp_path: Path, body: str) -> str:
    path = tmp_path / "helm"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize("body,needle", [
    ("echo 'hello world'", "no Kubernetes object (str)"),
    ("echo '[1, 2]'; echo ---; echo '- a'", "no Kubernetes object (list)"),
    ("echo 'apiVersion: v1'", "no Kubernetes object (dict)"),
    ("printf 'a: [\\n  b: {'", "not YAML"),
    ("printf 'key: \"unterminated\\n'", "not YAML"),
    ("printf '\\377\\376garbage'", "not UTF-8"),
    ("printf 'kind: ConfigMap\\n\\tbad: tab\\n'", "not YAML"),
])
def test_helm_output_that_is_not_a_rendered_chart_is_one_line(cli, tmp_path, scenario, body, needle):
    helm = _fake_helm(tmp_path, body)
    one_line_error(cli("check-fit", str(scenario), "--helm", helm), "helm template gpu-infra", helm, needle,
                   "is --helm (or $VLLM_EKS_HELM) a helm binary?")


def test_helms_multi_line_error_is_one_line_naming_what_failed(cli, tmp_path, scenario):
    helm = _fake_helm(tmp_path, "echo 'walk.go:74: found symbolic link' >&2; "
                                "echo 'Error: template: gpu-infra/templates/x.yaml:3:4: executing \"x\"' >&2; "
                                "echo '  at <.Values.nope>: nil pointer' >&2; exit 1")
    err = one_line_error(cli("check-fit", str(scenario), "--helm", helm), "helm template gpu-infra",
                         "failed (exit 1): Error: template: gpu-infra/templates/x.yaml:3:4", "2 more line(s)",
                         "for helm's whole message")
    assert "walk.go" not in err and "nil pointer" not in err


def test_a_one_line_helm_error_has_no_hint(cli, tmp_path, scenario):
    helm = _fake_helm(tmp_path, "echo 'Error: chart not found' >&2; exit 3")
    err = one_line_error(cli("check-fit", str(scenario), "--helm", helm), "failed (exit 3): Error: chart not found")
    assert "more line" not in err


def test_a_helm_that_cannot_run_is_one_line(cli, tmp_path, scenario):
    path = tmp_path / "helm"
    path.write_bytes(b"\x7fELF not really")
    path.chmod(0o755)
    one_line_error(cli("check-fit", str(scenario), "--helm", str(path)), "helm template gpu-infra", "cannot run")


@pytest.mark.parametrize("output,line", [
    ("Error: one\nmore\n", "Error: one"),
    ("warning: x\n\nError:   spaced   out\n", "Error: spaced out"),
    ("\n\n  just text  \nsecond\n", "just text"),
    ("", "no output"),
    ("Error: " + "y" * 500, "Error: " + "y" * 293 + "..."),
])
def test_the_failure_line_is_the_first_meaningful_one(output, line):
    from vllm_eks.check.scheduling import helm_failure_line

    assert helm_failure_line(output) == line

"""Malformed values for charts/vllm-inference: each file malformed/vllm-inference/<rule>/<case>.yaml
must be rejected by `helm template` (Helm 3 and Helm 4) with a message naming the offending key(s).
The folder names the rule the values break (unknown-key, no-literal-credentials, staging, ...) and
the file the case; the test id is `<rule>/<case>`. A new case goes into its rule's folder under a
name of its own, so nothing is numbered or renumbered.

A file says what it expects on its second line: `# expect: key.path[, key.path ...]`. Helm 3
prints schema errors as `a.b.0: ...` / `a.b: Additional property c ...`, Helm 4 as
`at '/a/b/0': ...` / `at '/a/b': additional properties 'c' ...`; the chart's validate helper
prints `a.b[0]: ...`. Any of those forms counts as naming the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness import helm
from tests.harness.key_paths import names_key
from tests.harness.paths import CHARTS

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
MALFORMED = Path(__file__).parent / "malformed" / "vllm-inference"
FILES = sorted(MALFORMED.glob("*/*.yaml"))
SENTINEL = "hf_" + "Sentinel0" * 4


def case_id(path: Path) -> str:
    """`<rule>/<case>`, e.g. `unknown-key/top-level`."""
    return f"{path.parent.name}/{path.stem}"


def expected_keys(path: Path) -> list[str]:
    for line in path.read_text().splitlines()[:3]:
        if line.startswith("# expect:"):
            return [k.strip() for k in line.split(":", 1)[1].split(",") if k.strip()]
    raise AssertionError(f"{case_id(path)}: no '# expect:' line")


def test_enough_malformed_files() -> None:
    assert len(FILES) >= 15, f"only {len(FILES)} malformed values files in {MALFORMED}"
    loose = sorted(p.name for p in MALFORMED.glob("*.yaml"))
    assert not loose, f"put each case into the folder of the rule it breaks: {loose}"


@pytest.mark.parametrize("values_file", FILES, ids=[case_id(f) for f in FILES])
def test_malformed_values_rejected_naming_the_key(values_file: Path, helm_version: str) -> None:
    with pytest.raises(helm.HelmError) as info:
        helm.render(CHART, [values_file], helm=helm_version, namespace="llm")
    message = info.value.stderr
    missing = [key for key in expected_keys(values_file) if not names_key(message, key)]
    assert not missing, f"{case_id(values_file)}: error does not name {missing}:\n{message}"


@pytest.mark.parametrize("values_file", [f for f in FILES if SENTINEL in f.read_text()],
                         ids=case_id)
def test_rejection_does_not_echo_the_token(values_file: Path, helm_version: str) -> None:
    """The key is named, the credential itself is not repeated in the error."""
    with pytest.raises(helm.HelmError) as info:
        helm.render(CHART, [values_file], helm=helm_version, namespace="llm")
    assert SENTINEL not in info.value.stderr + info.value.stdout


def test_validate_reports_every_error_in_one_failure() -> None:
    values_file = MALFORMED / "every-error-reported" / "several-relation-errors.yaml"
    with pytest.raises(helm.HelmError) as info:
        helm.render(CHART, [values_file], namespace="llm")
    message = info.value.stderr
    assert message.count("vllm-inference: invalid values:") == 1
    assert len(re.findall(r"^- ", message, flags=re.M)) >= len(expected_keys(values_file))

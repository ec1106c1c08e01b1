"""`vllm-eks verify` without the `verify` extra says which package is missing and how to install
it, in one line with exit 2, instead of a traceback."""

from __future__ import annotations

import subprocess
import sys

from tests.harness.paths import VALUES

# jsonschema blocked as if it were not installed (None in sys.modules makes its import fail)
PROGRAM = ("import sys; sys.modules['jsonschema'] = None\n"
           "from vllm_eks.cli.main import main\n"
           f"main(['verify', {str(VALUES)!r}])")


def test_missing_extra_is_one_line_naming_the_install() -> None:
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [
        "vllm-eks verify: error: verify needs the `verify` extra (jsonschema is not installed): "
        "pip install 'vllm-eks[verify]'"]

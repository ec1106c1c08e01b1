"""Regenerate (or --check) the generated blocks of the top-level README: the example
`vllm-eks plan` and `vllm-eks recommend` outputs and the scenario list, all produced by the
tools themselves. The blocks are made by vllm_eks.cli.readme; this is its command line."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.harness.paths

from tests.harness.paths import ROOT, SCENARIOS_FILE  # noqa: E402
from vllm_eks.cli import readme  # noqa: E402
from vllm_eks.output.doc_blocks import MissingBlockError  # noqa: E402

README = ROOT / "README.md"

if __name__ == "__main__":
    current = README.read_text()
    try:
        fresh = readme.render(current, SCENARIOS_FILE)
    except MissingBlockError as e:
        raise SystemExit(f"README.md has no <!-- BEGIN {e.name} --> block") from None
    except RuntimeError as e:
        raise SystemExit(str(e)) from None
    if "--check" in sys.argv:
        if fresh != current:
            raise SystemExit("README.md generated blocks are stale: run `make docs`")
    else:
        README.write_text(fresh)

"""Regenerate (or --check) the calibration table of docs/calibration-logs.md: every public vLLM
start-up log in tests/unit/data/calibration_logs.yaml, predicted through the generator
(vllm_eks.check.calibration.render_doc; this is its command line)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.harness.paths

from tests.harness.paths import DOCS, ROOT  # noqa: E402
from vllm_eks.check import calibration  # noqa: E402
from vllm_eks.output.doc_blocks import MissingBlockError  # noqa: E402

DOC = DOCS / "calibration-logs.md"
DATA = ROOT / "tests" / "unit" / "data" / "calibration_logs.yaml"

if __name__ == "__main__":
    current = DOC.read_text()
    try:
        fresh = calibration.render_doc(current, DATA)
    except MissingBlockError:
        raise SystemExit(f"{DOC.relative_to(ROOT)} has no <!-- BEGIN calibration-table --> block") from None
    if "--check" in sys.argv:
        if fresh != current:
            raise SystemExit(f"{DOC.relative_to(ROOT)}: the calibration table is stale: run `make docs`")
    else:
        DOC.write_text(fresh)

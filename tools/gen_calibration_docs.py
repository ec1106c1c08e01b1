"""Regenerate (or --check) the calibration table of docs/calibration-logs.md: every public vLLM
start-up log in tests/unit/data/calibration_logs.yaml, predicted through the generator."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from vllm_eks.check import calibration

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "calibration-logs.md"
DATA = ROOT / "tests" / "unit" / "data" / "calibration_logs.yaml"
BLOCK = re.compile(r"(<!-- BEGIN calibration-table -->\n).*?(<!-- END calibration-table -->)", re.S)


def render(text: str) -> str:
    if not BLOCK.search(text):
        raise SystemExit(f"{DOC.relative_to(ROOT)} has no <!-- BEGIN calibration-table --> block")
    table = calibration.table([calibration.predict(log) for log in calibration.load(DATA)])
    return BLOCK.sub(lambda m: m.group(1) + table + m.group(2), text)


if __name__ == "__main__":
    current = DOC.read_text()
    fresh = render(current)
    if "--check" in sys.argv:
        if fresh != current:
            raise SystemExit(f"{DOC.relative_to(ROOT)}: the calibration table is stale: run `make docs`")
    else:
        DOC.write_text(fresh)

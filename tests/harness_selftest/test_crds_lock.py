"""tools/crds.lock pins exactly the CRD files the tests read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.harness.paths import TOOLS

FETCH = TOOLS / "fetch-crds.py"


def test_crd_dir_matches_the_lock(crd_dir: Path) -> None:
    proc = subprocess.run([sys.executable, str(FETCH), "verify", str(crd_dir)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pinned = {line.split("\t")[0] for line in (TOOLS / "crds.lock").read_text().splitlines()
              if line and not line.startswith("#")}
    present = {p.name for p in crd_dir.glob("*.yaml")}
    assert present == pinned, f"unpinned: {present - pinned}, missing: {pinned - present}"


def test_verify_detects_a_changed_file(crd_dir: Path, tmp_path: Path) -> None:
    for src in crd_dir.glob("*.yaml"):
        (tmp_path / src.name).write_bytes(src.read_bytes())
    victim = tmp_path / "karpenter.sh_nodepools.yaml"
    victim.write_bytes(victim.read_bytes() + b"\n# edited\n")
    proc = subprocess.run([sys.executable, str(FETCH), "verify", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "mismatch karpenter.sh_nodepools.yaml" in proc.stderr

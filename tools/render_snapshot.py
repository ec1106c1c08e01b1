"""Render every chart with every values file it is tested with (each values/ scenario and each
charts/<chart>/ci/*-values.yaml) with the pinned Helm 4 and write each manifest to one file of a
folder, with every scenario's plan.json beside them. Two snapshots taken before and after a
change are compared with `diff -r`: a refactor that keeps behaviour leaves no difference.

    python tools/render_snapshot.py OUT_DIR
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.harness.paths

from tests.harness import helm  # noqa: E402
from tests.harness.paths import ROOT, VALUES  # noqa: E402

CHARTS = sorted(p.parent.name for p in (ROOT / "charts").glob("*/Chart.yaml"))


def pairs() -> list[tuple[str, Path]]:
    found = []
    for chart in CHARTS:
        for scenario in sorted(p for p in VALUES.iterdir() if p.is_dir()):
            found.append((chart, scenario / f"{chart}.yaml"))
        found += [(chart, f) for f in sorted((ROOT / "charts" / chart / "ci").glob("*-values.yaml"))]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: render_snapshot.py OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for chart, values in pairs():
        text = helm.template_text(ROOT / "charts" / chart, [values], helm="helm4", namespace="llm")
        (out / f"{chart}--{values.parent.name}--{values.stem}.yaml").write_text(text)
    for plan in sorted(VALUES.glob("*/plan.json")):
        shutil.copy(plan, out / f"plan--{plan.parent.name}.json")
    print(f"{len(list(out.iterdir()))} files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

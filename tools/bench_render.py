"""Render and strictly validate the whole matrix: every chart x (every values/ scenario + every
charts/*/ci/*-values.yaml) x Helm 3 and 4, every object against Kubernetes 1.31-1.35 or the
pinned CRDs, then one checkov scan over everything. Prints counts and wall times (target: the
render + validation matrix under 60 s on 2 cores)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.harness.paths

from tests.harness import KUBE_VERSIONS, checkov, helm, load_crds, validate_all  # noqa: E402  # noqa: E402
from tests.harness.paths import ROOT, VALUES  # noqa: E402

# Every chart: the directories charts/<name>/ holding a Chart.yaml.
CHARTS = sorted(p.parent.name for p in (ROOT / "charts").glob("*/Chart.yaml"))


def matrix() -> list[tuple[str, Path]]:
    pairs = []
    for chart in CHARTS:
        for scenario in sorted(p for p in VALUES.iterdir() if p.is_dir()):
            pairs.append((chart, scenario / f"{chart}.yaml"))
        pairs += [(chart, f) for f in sorted((ROOT / "charts" / chart / "ci").glob("*-values.yaml"))]
    return pairs


def main() -> None:
    registry = load_crds()
    pairs = matrix()
    rendered: dict[str, str] = {}
    per_helm: Counter[str] = Counter()
    per_minor: Counter[str] = Counter()
    start = time.perf_counter()
    for helm_name in helm.HELM_VERSIONS:
        for chart, values in pairs:
            text = helm.template_text(ROOT / "charts" / chart, [values], helm=helm_name, namespace="llm")
            objects = helm.load_documents(text)
            for kube in KUBE_VERSIONS:
                report = validate_all(objects, registry, kube_version=kube)
                per_minor[kube] += report.total
            per_helm[helm_name] += len(objects)
            if helm_name == "helm4":
                rendered[f"{chart}--{values.parent.name}--{values.stem}.yaml"] = text
    matrix_seconds = time.perf_counter() - start
    print(f"render+validate: {len(pairs)} chart x values pairs x {len(helm.HELM_VERSIONS)} Helm versions "
          f"in {matrix_seconds:.1f} s (target < 60 s)")
    for name, count in per_helm.items():
        print(f"  {name} ({helm.version(name)}): {count} objects rendered, each validated against "
              f"{len(KUBE_VERSIONS)} Kubernetes minors")
    for kube, count in per_minor.items():
        print(f"  Kubernetes {kube}: {count} object validations passed")
    start = time.perf_counter()
    result = checkov.scan(rendered)
    print(f"checkov: {result.summary()} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Package every chart under charts/ into OUT (default dist/charts) with the pinned Helm.

`make package` and the cluster tier both call this, so the .tgz files the tests install are the
ones a release pushes. A chart whose Chart.yaml declares dependencies gets them from the sibling
charts first (`helm dependency build`), so an umbrella packages with the versions it pins.

Prints one line per package (`<name>-<version>.tgz`); exits 1 with Helm's message when a chart
does not package."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def charts(root: Path) -> list[Path]:
    """Charts in dependency order: a chart after every chart it depends on by file:// path."""
    found = {p.parent.name: p.parent for p in sorted((root / "charts").glob("*/Chart.yaml"))}
    ordered: list[Path] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        if name in seen:
            raise SystemExit(f"charts/{name}: dependency cycle {' -> '.join((*seen, name))}")
        if found[name] in ordered:
            return
        for dep in _local_dependencies(found[name]):
            if dep in found:
                visit(dep, (*seen, name))
        ordered.append(found[name])

    for name in found:
        visit(name, ())
    return ordered


def _local_dependencies(chart: Path) -> list[str]:
    meta = yaml.safe_load((chart / "Chart.yaml").read_text()) or {}
    deps = meta.get("dependencies") or []
    return [Path(d["repository"].removeprefix("file://")).name for d in deps
            if str(d.get("repository", "")).startswith("file://")]


def package(helm: str, chart: Path, out: Path) -> Path:
    if _local_dependencies(chart):
        _run([helm, "dependency", "build", str(chart), "--skip-refresh"])
    proc = _run([helm, "package", str(chart), "--destination", str(out)])
    # "Successfully packaged chart and saved it to: <path>"
    return Path(proc.stdout.strip().rsplit(": ", 1)[-1])


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}\n")
        raise SystemExit(1)
    return proc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "dist" / "charts", help="folder for the .tgz files")
    ap.add_argument("--helm", default=os.environ.get("HELM") or shutil.which("helm") or "helm",
                    help="the helm binary (default $HELM, else helm on PATH)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for chart in charts(ROOT):
        print(package(args.helm, chart, args.out).name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

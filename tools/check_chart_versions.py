#!/usr/bin/env python3
"""Fail when a chart changed since the target branch without a higher `version` in its Chart.yaml
(the rule chart-testing's `ct lint` applies; docs/versioning.md is the policy).

A chart changed when any file under charts/<name>/ differs from BASE except its README.md and its
ci/ scenario values (neither is part of what users install). BASE is --base, else
$CHART_VERSION_BASE, else the merge base of HEAD and origin/main. A chart BASE does not have is new
and needs no bump. When BASE is HEAD itself (CI on the target branch) nothing has changed.

Exit 0 with one line per checked chart, 1 with one line per chart that needs a bump, 2 when BASE
cannot be resolved."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

NOT_PACKAGED = ("README.md", "ci/")
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


class BaseError(Exception):
    """BASE is not a revision of the repository."""


def semver_key(version: str) -> tuple:
    """Order of semver 2: a pre-release sorts before its release; build metadata is ignored."""
    m = SEMVER.match(version)
    if not m:
        raise ValueError(f"{version!r} is not a semver version (MAJOR.MINOR.PATCH[-PRE][+BUILD])")
    major, minor, patch, pre = m.groups()
    if pre is None:
        return (int(major), int(minor), int(patch), 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, ids)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def resolve_base(repo: Path, base: str | None) -> str:
    rev = base or os.environ.get("CHART_VERSION_BASE") or ""
    if not rev:
        proc = _git(repo, "merge-base", "HEAD", "origin/main")
        if proc.returncode != 0:
            raise BaseError("no --base, no $CHART_VERSION_BASE and no origin/main to compare with: "
                            "name the target branch with --base REV (a shallow CI checkout needs its history)")
        rev = proc.stdout.strip()
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if proc.returncode != 0:
        raise BaseError(f"--base {rev}: not a commit of {repo}")
    return proc.stdout.strip()


def _version_at(repo: Path, rev: str | None, chart: str) -> str | None:
    path = f"charts/{chart}/Chart.yaml"
    if rev is None:
        file = repo / path
        text = file.read_text() if file.is_file() else None
    else:
        proc = _git(repo, "show", f"{rev}:{path}")
        text = proc.stdout if proc.returncode == 0 else None
    if text is None:
        return None
    doc = yaml.safe_load(text)
    return str(doc.get("version", "")) if isinstance(doc, dict) else ""


def changed_files(repo: Path, base: str, chart: str) -> list[str]:
    """Files of the chart that differ between BASE and the working tree (untracked ones too)."""
    prefix = f"charts/{chart}/"
    tracked = _git(repo, "diff", "--name-only", base, "--", prefix).stdout.split()
    untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "--", prefix).stdout.split()
    names = sorted({p[len(prefix):] for p in tracked + untracked})
    return [n for n in names if not n.startswith(NOT_PACKAGED)]


def check(repo: Path, base: str) -> tuple[list[str], list[str]]:
    """(lines for charts that are fine, lines for charts that need a bump)."""
    ok, bad = [], []
    for chart_yaml in sorted((repo / "charts").glob("*/Chart.yaml")):
        chart = chart_yaml.parent.name
        head, before = _version_at(repo, None, chart), _version_at(repo, base, chart)
        changed = changed_files(repo, base, chart)
        if before is None:
            ok.append(f"charts/{chart}: new since {base[:12]} (version {head})")
        elif not changed:
            ok.append(f"charts/{chart}: unchanged since {base[:12]} (version {head})")
        else:
            shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
            try:
                higher = semver_key(head or "") > semver_key(before)
            except ValueError as e:
                bad.append(f"charts/{chart}/Chart.yaml: version {e}")
                continue
            line = f"charts/{chart}: {shown} changed since {base[:12]}"
            if higher:
                ok.append(f"{line}; version {before} -> {head}")
            else:
                bad.append(f"{line}, but version {head} is not higher than {before} there: bump `version` in "
                           f"charts/{chart}/Chart.yaml (docs/versioning.md)")
    return ok, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="target branch or commit to compare with (default: merge base with origin/main)")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        base = resolve_base(args.repo, args.base)
    except BaseError as e:
        print(f"check_chart_versions: {e}", file=sys.stderr)
        return 2
    ok, bad = check(args.repo, base)
    for line in ok:
        print(line)
    for line in bad:
        print(f"error: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

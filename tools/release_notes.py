#!/usr/bin/env python3
"""Release notes for a tag: the CHANGELOG.md section of its version, after checking that the tag
is the version pyproject.toml gives the CLI (a release is named by the vllm-eks version; each chart
keeps its own version, listed in the section).

  release_notes.py --check-tag v0.2.0 > notes.md

Exits 1 with one line when the tag is not vMAJOR.MINOR.PATCH, differs from pyproject.toml's
version, or CHANGELOG.md has no `## <version>` section (rename `## Unreleased` when releasing)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAG = re.compile(r"^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$")


class ReleaseError(Exception):
    pass


def project_version(pyproject: Path) -> str:
    m = re.search(r'^version = "([^"]+)"$', pyproject.read_text(), re.M)
    if not m:
        raise ReleaseError(f"{pyproject}: no version = \"...\" line")
    return m.group(1)


def section(changelog: str, version: str) -> str:
    """The text under `## <version>` (header words after the version allowed) up to the next `## `."""
    m = re.search(rf"^## {re.escape(version)}(?:\s[^\n]*)?\n(.*?)(?=^## |\Z)", changelog, re.M | re.S)
    if not m:
        raise ReleaseError(f"CHANGELOG.md has no '## {version}' section: rename '## Unreleased' to it for the release")
    return m.group(1).strip() + "\n"


def notes_for_tag(tag: str, root: Path = ROOT) -> str:
    m = TAG.match(tag)
    if not m:
        raise ReleaseError(f"tag {tag!r}: expected vMAJOR.MINOR.PATCH (e.g. v0.2.0)")
    version = m.group(1)
    pinned = project_version(root / "pyproject.toml")
    if pinned != version:
        raise ReleaseError(f"tag {tag} but pyproject.toml's version is {pinned}: bump it or tag v{pinned}")
    return section((root / "CHANGELOG.md").read_text(), version)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check-tag", required=True, metavar="TAG", help="the release tag, vMAJOR.MINOR.PATCH")
    args = ap.parse_args(argv)
    try:
        sys.stdout.write(notes_for_tag(args.check_tag))
    except ReleaseError as e:
        print(f"release-notes: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Download the pinned upstream CRDs listed in tools/crds.lock, or verify a CRD directory.

    fetch-crds.py fetch [--dest DIR]   download every file at its pinned commit, check sha256
    fetch-crds.py verify DIR           check that DIR holds exactly the pinned files

Files are written only after their sha256 matches, so DIR never holds an unpinned CRD. Needs
access to GitHub's raw file host; without it the command fails and says so (CI instead points
VLLM_EKS_CRD_DIR at a directory that already holds the same files).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

LOCK = Path(__file__).with_name("crds.lock")
RAW_URL = "https://raw.githubusercontent.com/{upstream}/{commit}/{path}"
TIMEOUT_S = 30


@dataclass(frozen=True)
class Pin:
    file: str
    upstream: str
    tag: str
    commit: str
    path: str
    sha256: str

    @property
    def url(self) -> str:
        return RAW_URL.format(upstream=self.upstream, commit=self.commit, path=self.path)


def read_lock(lock: Path = LOCK) -> list[Pin]:
    pins: list[Pin] = []
    for number, line in enumerate(lock.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 6:
            raise SystemExit(f"{lock}:{number}: expected 6 tab-separated fields, got {len(fields)}")
        pins.append(Pin(*fields))
    return pins


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(dest: Path) -> int:
    dest.mkdir(parents=True, exist_ok=True)
    failures = 0
    for pin in read_lock():
        target = dest / pin.file
        if target.is_file() and sha256_of(target.read_bytes()) == pin.sha256:
            print(f"ok       {pin.file} (cached)")
            continue
        try:
            with urllib.request.urlopen(pin.url, timeout=TIMEOUT_S) as response:
                data = response.read()
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            print(
                f"error: cannot download {pin.file} from {pin.url}: {exc}\n"
                "  `make crds` needs internet access to GitHub. Without it, set VLLM_EKS_CRD_DIR to a\n"
                "  directory that holds the pinned files (`tools/fetch-crds.py verify DIR` checks one).",
                file=sys.stderr,
            )
            return 1
        got = sha256_of(data)
        if got != pin.sha256:
            print(f"error: sha256 mismatch for {pin.file} ({pin.upstream}@{pin.tag}):\n"
                  f"  expected {pin.sha256}\n  got      {got}\n  not written", file=sys.stderr)
            failures += 1
            continue
        tmp = target.with_suffix(target.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(target)
        print(f"fetched  {pin.file} ({pin.upstream}@{pin.tag})")
    if failures:
        return 1
    print(f"{dest}: all pinned CRDs present; use it with VLLM_EKS_CRD_DIR={dest.resolve()}")
    return 0


def verify(directory: Path) -> int:
    if not directory.is_dir():
        print(f"error: {directory} is not a directory", file=sys.stderr)
        return 1
    problems: list[str] = []
    for pin in read_lock():
        target = directory / pin.file
        if not target.is_file():
            problems.append(f"missing  {pin.file}")
        elif (got := sha256_of(target.read_bytes())) != pin.sha256:
            problems.append(f"mismatch {pin.file}: sha256 {got}, pinned {pin.sha256}")
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    print(f"{directory}: all {len(read_lock())} pinned CRDs match")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_fetch = sub.add_parser("fetch", help="download the pinned CRDs")
    p_fetch.add_argument("--dest", type=Path, default=Path(".cache/crds"))
    p_verify = sub.add_parser("verify", help="check a directory against the pins")
    p_verify.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    return fetch(args.dest) if args.command == "fetch" else verify(args.directory)


if __name__ == "__main__":
    sys.exit(main())

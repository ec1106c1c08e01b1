#!/usr/bin/env python3
"""Push chart packages (.tgz from `make package`) to an OCI registry with Helm: each lands at
REGISTRY/<chart>:<version>, which `helm install <name> REGISTRY/<chart> --version V` installs.

The release workflow runs it after `helm registry login`; the cluster tier runs it against a local
registry (--plain-http). Prints `<ref> <digest>` per package; exits 1 naming the package Helm
refused."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REGISTRY = re.compile(r"^oci://[^/\s]+(/[^\s]*)?$")
DIGEST = re.compile(r"^Digest: (sha256:[0-9a-f]{64})$", re.M)


def push(helm: str, package: Path, registry: str, plain_http: bool = False) -> tuple[str, str]:
    cmd = [helm, "push", str(package), registry.rstrip("/"), *(["--plain-http"] if plain_http else [])]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{package.name}: helm push to {registry} exited {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout).strip()}")
    out = proc.stdout + proc.stderr
    ref = out.split("Pushed: ", 1)[1].split()[0] if "Pushed: " in out else ""
    digest = DIGEST.search(out)
    return ref, digest.group(1) if digest else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--registry", required=True, help="oci://HOST[/PATH], e.g. oci://ghcr.io/OWNER/charts")
    ap.add_argument("--plain-http", action="store_true", help="the registry serves HTTP (a local test registry)")
    ap.add_argument("--helm", default=os.environ.get("HELM") or shutil.which("helm") or "helm")
    ap.add_argument("packages", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if not REGISTRY.match(args.registry):
        ap.error(f"--registry {args.registry!r}: expected oci://HOST[/PATH]")
    missing = [str(p) for p in args.packages if not p.is_file() or p.suffix != ".tgz"]
    if missing:
        ap.error(f"not chart packages (.tgz): {', '.join(missing)}; run `make package` first")
    try:
        for package in args.packages:
            print(*push(args.helm, package, args.registry, args.plain_http))
    except RuntimeError as e:
        print(f"push-charts: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

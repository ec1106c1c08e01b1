#!/usr/bin/env python3
"""GPU interconnect check of one model-server pod (helm test of topology multi-node).

Runs `nvidia-smi topo -m` inside the pod (kubectl exec from the test pod) and fails when two GPUs
of one tensor-parallel group are not connected by NVLink (`NV<n>` in the matrix). Over PCIe
(PIX/PXB/PHB) or across the CPU interconnect (NODE/SYS) every all-reduce of the TP group crawls.
The pod's visible GPUs are its own; vLLM's TP group i is GPUs [i*tp, (i+1)*tp).

Standard library only: it runs with the serving image's python3.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+)$")
_GPU = re.compile(r"^GPU(\d+)$")
_NVLINK = re.compile(r"^NV\d+$")


class TopologyError(ValueError):
    """The text is not an `nvidia-smi topo -m` matrix."""


@dataclass(frozen=True)
class Topology:
    gpus: list[str]                       # GPU0, GPU1, ... in matrix order
    links: dict[tuple[str, str], str]     # (GPU0, GPU1) -> "NV18" / "PIX" / "SYS" ...

    def link(self, a: str, b: str) -> str:
        return self.links[(a, b)]


def parse_topo(text: str) -> Topology:
    """The GPU-to-GPU part of `nvidia-smi topo -m`. The header names the device columns (GPUs,
    then NICs); affinity columns follow them and are ignored."""
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header = next((line for line in lines if re.match(r"^\s+GPU0\b", line)), None)
    if header is None:
        raise TopologyError("no header line starting with GPU0: not `nvidia-smi topo -m` output")
    columns: list[str] = []
    for token in header.split():
        if not _DEVICE.match(token):
            break
        columns.append(token)
    gpus = [c for c in columns if _GPU.match(c)]
    links: dict[tuple[str, str], str] = {}
    for line in lines:
        tokens = line.split()
        if not tokens or not _GPU.match(tokens[0]) or line.startswith((" ", "\t")):
            continue
        row, cells = tokens[0], tokens[1:]
        if len(cells) < len(columns):
            raise TopologyError(f"row {row} has {len(cells)} cells, the header names {len(columns)} devices")
        for col, cell in zip(columns, cells):
            if _GPU.match(col):
                links[(row, col)] = cell
    missing = [(a, b) for a in gpus for b in gpus if (a, b) not in links]
    if not gpus or missing:
        raise TopologyError(f"incomplete GPU matrix (missing {missing[:3]})")
    return Topology(gpus=gpus, links=links)


def tp_groups(gpus: list[str], tp: int) -> list[list[str]]:
    if tp < 1:
        raise ValueError(f"tensor parallel size must be >= 1, got {tp}")
    if len(gpus) < tp:
        raise TopologyError(f"the pod sees {len(gpus)} GPUs, tensor parallel size is {tp}")
    ordered = sorted(gpus, key=lambda g: int(_GPU.match(g).group(1)))  # type: ignore[union-attr]
    return [ordered[i:i + tp] for i in range(0, len(ordered) - len(ordered) % tp, tp)]


def non_nvlink_pairs(topo: Topology, tp: int) -> list[tuple[str, str, str]]:
    """(gpu_a, gpu_b, link) for every pair inside a TP group whose link is not NVLink."""
    bad = []
    for group in tp_groups(topo.gpus, tp):
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                link = topo.link(a, b)
                if not _NVLINK.match(link):
                    bad.append((a, b, link))
    return bad


def check(text: str, tp: int) -> tuple[bool, str]:
    """(passed, report) for one pod's `nvidia-smi topo -m` output."""
    topo = parse_topo(text)
    groups = tp_groups(topo.gpus, tp)
    bad = non_nvlink_pairs(topo, tp)
    if bad:
        pairs = ", ".join(f"{a}-{b} {link}" for a, b, link in bad)
        return False, (f"FAIL: {len(bad)} GPU pair(s) inside a tensor-parallel group are not NVLink-connected: "
                       f"{pairs}. TP all-reduces cross PCIe or the CPU interconnect")
    links = sorted({topo.link(a, b) for g in groups for a in g for b in g if a != b})
    return True, (f"OK: {len(groups)} TP group(s) of {tp} GPU(s), every pair NVLink-connected "
                  f"({', '.join(links) or 'single GPU'})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tp", type=int, required=True, help="tensor parallel size of the pod")
    parser.add_argument("--input", help="read this file instead of running nvidia-smi topo -m")
    args = parser.parse_args(argv)
    if args.input:
        with open(args.input, encoding="utf-8") as fh:
            text = fh.read()
    else:
        text = subprocess.run(["nvidia-smi", "topo", "-m"], check=True, capture_output=True, text=True).stdout
    print(text)
    try:
        passed, report = check(text, args.tp)
    except (TopologyError, ValueError) as exc:
        print(f"FAIL: {exc}")
        return 2
    print(report)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

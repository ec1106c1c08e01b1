#!/usr/bin/env python3
"""Regenerate generator/vllm_eks/catalog/data/instances.csv (and the test copy of Karpenter's published
allocatable) from three files of an aws/karpenter-provider-aws release:

  website/content/en/<version>/reference/instance-types.md   per type: labels and resources
  pkg/providers/instancetype/zz_generated.vpclimits.go        ENIs and IPv4 addresses per ENI
  pkg/providers/pricing/zz_generated.pricing_aws.go           on-demand prices, us-east-1

    git -C <karpenter git dir> show v1.14.1:<path> > <file>      (for each of the three)
    tools/instances_from_karpenter.py --reference instance-types.md \
        --vpclimits zz_generated.vpclimits.go --pricing zz_generated.pricing_aws.go

The catalog keeps the shape of each type (vCPUs, memory, ENIs, IPv4 per ENI, GPUs, EFA, NVMe,
network, price); node allocatable is computed from it (vllm_eks.catalog.node_allocatable) and
tests/unit/data/karpenter_allocatable.csv keeps what Karpenter published, for the test that
recomputes every row. Figures Karpenter does not carry (nvidia-smi totals, the interconnect) come
from the tables below; their sources are in generator/vllm_eks/catalog/data/instances.sources.md.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.harness.paths

from tests.harness.paths import GENERATOR_PACKAGE, ROOT  # noqa: E402

CATALOG = GENERATOR_PACKAGE / "catalog" / "data" / "instances.csv"
PUBLISHED = ROOT / "tests" / "unit" / "data" / "karpenter_allocatable.csv"

# The NVIDIA families the catalog models (every size of each), in the order they are listed.
FAMILIES = ("g4dn", "g5", "g6", "g6e", "gr6", "g7e", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300")
# Non-CUDA accelerators kept as rows (the catalog skips them; the CLI says why).
NEURON = {"trn1.32xlarge": ("trainium", "NeuronLink"), "inf2.48xlarge": ("inferentia2", "NeuronLink-v2")}

# (Karpenter gpu name, EC2 MiB per GPU) -> total nvidia-smi prints (gpus.yaml cites each).
NVIDIA_SMI_MIB = {("t4", 16384): 15360, ("a10g", 22888): 23028, ("l4", 22888): 23034,
                  ("l40s", 45776): 46068, ("a100", 40960): 40960, ("a100", 81920): 81920,
                  ("h100", 81920): 81559, ("h200", 144384): 143771, ("b200", 183359): 183359,
                  ("b300", 275040): 275040, ("rtx-pro-server-6000", 98304): 97887}
INTERCONNECT = {"p4d": "NVSwitch NVLink3 600GB/s", "p4de": "NVSwitch NVLink3 600GB/s",
                "p5": "NVSwitch NVLink4 900GB/s", "p5e": "NVSwitch NVLink4 900GB/s",
                "p5en": "NVSwitch NVLink4 900GB/s", "p6-b200": "NVSwitch NVLink5 1.8TB/s",
                "p6-b300": "NVSwitch NVLink5 1.8TB/s"}

COLUMNS = ("instance", "gpu", "gpu_count", "gpu_mem_mib_ec2", "gpu_mem_mib_nvidia_smi", "interconnect",
           "vcpu", "mem_mib", "max_enis", "ipv4_per_eni", "efa_max", "net_mbps_baseline", "local_nvme_gb",
           "usd_hr_us_east_1", "price_date")
LABEL = "karpenter.k8s.aws/instance-"


def parse_reference(text: str) -> dict[str, dict[str, dict[str, str]]]:
    types: dict[str, dict[str, dict[str, str]]] = {}
    current: dict[str, dict[str, str]] | None = None
    section = "labels"
    for line in text.splitlines():
        if m := re.match(r"^### `(.+)`", line):
            current = {"labels": {}, "resources": {}}
            types[m.group(1)] = current
        elif line.startswith("#### Labels"):
            section = "labels"
        elif line.startswith("#### Resources"):
            section = "resources"
        elif current is not None and (m := re.match(r"^ \|([^|]+)\|([^|]*)\|$", line)):
            if m.group(1) not in ("Label", "Resource", "--"):
                current[section][m.group(1)] = m.group(2)
    return types


def parse_vpclimits(text: str) -> dict[str, tuple[int, int]]:
    """Type -> (network interfaces of the default network card, IPv4 addresses per interface)."""
    out = {}
    for m in re.finditer(r'^\t"([^"]+)": \{\n(.*?)^\t\},', text, re.S | re.M):
        body = m.group(2)
        ipv4 = int(re.search(r"IPv4PerInterface:\s+(\d+)", body).group(1))
        default = int(re.search(r"DefaultNetworkCardIndex:\s+(\d+)", body).group(1))
        cards = {int(c.group(2)): int(c.group(1)) for c in re.finditer(
            r"MaximumNetworkInterfaces:\s+(\d+),\s*NetworkCardIndex:\s+(\d+)", body)}
        out[m.group(1)] = (cards[default], ipv4)
    return out


def parse_pricing(text: str) -> tuple[dict[str, str], str]:
    date = re.search(r"// generated at (\d{4}-\d{2}-\d{2})T\S+ for us-east-1", text).group(1)
    block = text.split('"us-east-1": {', 1)[1].split("\n\t},", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r'"([^"]+)": ([0-9.]+)', block)}, date


def rows(reference: str, vpclimits: str, pricing: str) -> tuple[list[dict], list[dict]]:
    types, limits = parse_reference(reference), parse_vpclimits(vpclimits)
    prices, date = parse_pricing(pricing)
    catalog, published = [], []
    for name, t in types.items():
        lab, res = t["labels"], t["resources"]
        family = lab.get(LABEL + "family")
        if family in FAMILIES:
            gpu, ec2 = lab[LABEL + "gpu-name"], int(lab[LABEL + "gpu-memory"])
            smi, link = NVIDIA_SMI_MIB[(gpu, ec2)], INTERCONNECT.get(family, "PCIe")
            if int(lab[LABEL + "gpu-count"]) == 1 and family in INTERCONNECT:
                link = "single GPU"
        elif name in NEURON:
            (gpu, link), ec2, smi = NEURON[name], "", ""
        else:
            continue
        enis, ipv4 = limits[name]
        price = prices.get(name, "")
        catalog.append({
            "instance": name, "gpu": gpu,
            "gpu_count": res.get("nvidia.com/gpu") or res.get("aws.amazon.com/neuron") or lab.get(LABEL + "accelerator-count", ""),
            "gpu_mem_mib_ec2": ec2, "gpu_mem_mib_nvidia_smi": smi, "interconnect": link,
            "vcpu": lab[LABEL + "cpu"], "mem_mib": lab[LABEL + "memory"], "max_enis": enis, "ipv4_per_eni": ipv4,
            "efa_max": res.get("vpc.amazonaws.com/efa", "0"), "net_mbps_baseline": lab[LABEL + "network-bandwidth"],
            "local_nvme_gb": lab.get(LABEL + "local-nvme", "0"), "usd_hr_us_east_1": price,
            "price_date": date if price else ""})
        published.append({"instance": name, "alloc_cpu": res["cpu"], "alloc_mem": res["memory"], "max_pods": res["pods"]})
    order = {f: i for i, f in enumerate(FAMILIES + ("trn1", "inf2"))}
    catalog.sort(key=lambda r: order[r["instance"].split(".")[0]])
    return catalog, published


def write(path: Path, fieldnames, data) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fieldnames, lineterminator="\n")
        w.writeheader()
        w.writerows(data)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--vpclimits", type=Path, required=True)
    ap.add_argument("--pricing", type=Path, required=True)
    a = ap.parse_args()
    catalog, published = rows(a.reference.read_text(), a.vpclimits.read_text(), a.pricing.read_text())
    write(CATALOG, COLUMNS, catalog)
    write(PUBLISHED, ("instance", "alloc_cpu", "alloc_mem", "max_pods"), published)
    print(f"{len(catalog)} rows -> {CATALOG.relative_to(ROOT)}, {PUBLISHED.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

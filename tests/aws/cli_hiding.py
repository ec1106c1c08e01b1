"""`vllm-eks` with some instance types taken out of the catalog: the types named in
VLLM_EKS_TEST_UNCATALOGUED (comma-separated). The catalog now holds every NVIDIA type moto's
EC2 data has that vllm-eks models, so the aws tier hides the types it reads through EC2; their
catalog rows (from Karpenter's reference) are then the figures to compare the EC2 reading with.
Test code only: the generator has no such switch."""

from __future__ import annotations

import os
import sys

import vllm_eks
from vllm_eks.catalog import instances as hardware
from vllm_eks.cli import main as cli

HIDDEN = {t for t in os.environ.get("VLLM_EKS_TEST_UNCATALOGUED", "").split(",") if t}
_full = hardware.instance_catalog


def _partial() -> dict:
    return {name: hw for name, hw in _full().items() if name not in HIDDEN}


# every module that imported instance_catalog by name sees the partial catalog
for name, module in list(sys.modules.items()):
    if name.startswith(vllm_eks.__name__) and getattr(module, "instance_catalog", None) is _full:
        module.instance_catalog = _partial

if __name__ == "__main__":
    sys.argv[0] = "vllm-eks"
    cli.main()

"""Which EC2 instance types offer GPUDirect RDMA: an EFA device reading and writing GPU memory
directly, without a copy through host memory.

EC2's DescribeInstanceTypes has no field for it (its NetworkInfo.EfaInfo carries only
MaximumEfaInterfaces), so this is a rule by instance family, the same for a type in the catalog
and one read from EC2. AWS introduced GPUDirect RDMA over EFA with P4d ("400 Gbps with support
for EFA and GPUDirect RDMA", AWS Compute Blog, "Amazon EC2 P4d instances deep dive",
aws.amazon.com/blogs/compute/amazon-ec2-p4d-instances-deep-dive/), and offers it on the P-series
from p4d on; the G-series (g4dn, g5, g6, g6e, gr6, g7e) have EFA on their larger sizes but are not
listed with it, so they count as without it: a host-memory transfer works there and on every
other type, GPUDirect RDMA is only faster (planning/kv_transfer.py)."""

from __future__ import annotations

# Instance families (the part of the type name before the dot) with GPUDirect RDMA over EFA.
GPUDIRECT_RDMA_FAMILIES: tuple[str, ...] = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300")

GPUDIRECT_RDMA_SOURCE = ("AWS offers GPUDirect RDMA over EFA on the P-series from p4d on (AWS Compute Blog, "
                         "'Amazon EC2 P4d instances deep dive'); EC2 DescribeInstanceTypes has no field for it")


def supports_gpudirect_rdma(instance: str) -> bool:
    """Whether EFA on `instance` reads and writes GPU memory directly (GPUDirect RDMA)."""
    return instance.split(".", 1)[0].lower() in GPUDIRECT_RDMA_FAMILIES

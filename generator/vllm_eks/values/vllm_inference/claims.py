"""Rules shared by the claims the chart creates for the generator (cache.pvc, staging.pvc): each
is ReadWriteMany, which EKS's default StorageClass (EBS, ReadWriteOnce only) cannot provision, so
a class must be named; and a claim given a size must hold what the Plan puts on it."""

from __future__ import annotations

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import gib, quantity_bytes

RWX_CLASS_NEEDED = (
    "{what} makes the chart create a ReadWriteMany claim, which EKS's default StorageClass (EBS) cannot "
    "provision (the claim and the pods would stay Pending): give {flag} with an EFS or FSx for Lustre class, "
    "or {existing}")


def check_claim_holds(size: str, flag: str, needed_bytes: int, what: str) -> None:
    """A claim of `size` (a Kubernetes quantity, already pattern-checked) holds `needed_bytes`."""
    given = quantity_bytes(size)
    if given < needed_bytes:
        raise InvalidOptionError(f"{flag} {size}: the claim must hold {what}, {gib(needed_bytes)} in this plan; "
                                 f"give at least that or leave {flag} out")

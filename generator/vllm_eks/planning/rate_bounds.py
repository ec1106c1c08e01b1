"""The lowest rates the planner accepts for reading or copying the checkpoint
(--load-bandwidth-mib-s, the FSx throughput flags, --cache-read-mib-s, --stage-bandwidth-mib-s).
Each rate sizes a deadline: the startup probe's model-load budget or the staging Job's
activeDeadlineSeconds. A rate at which one pass over the checkpoint takes longer than
MAX_PASS_SECONDS gives a budget that detects a hung load only after days (or decades), which is
no probe at all; such a rate is a typo or a unit mix-up (MiB/s, not MB/min), so it is refused
with the rate that would be accepted."""

from __future__ import annotations

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB, MIB
from vllm_eks.planning.model_source import LoadSource
from vllm_eks.spec.request import PlanRequest

# One pass over the checkpoint at the given rate: a day is already far beyond any real volume,
# network or Hub download of the models the catalog holds (the largest, ~700 GiB at 10 MiB/s,
# takes 20 h).
MAX_PASS_SECONDS = 24 * 3600


def check_rate(flag: str, bytes_per_s: int, checkpoint_bytes: int, what: str) -> None:
    """Refuse a rate at which `what` (one pass over `checkpoint_bytes`) outlasts MAX_PASS_SECONDS."""
    seconds = checkpoint_bytes / max(bytes_per_s, 1)
    if seconds > MAX_PASS_SECONDS:
        least = checkpoint_bytes / MAX_PASS_SECONDS / MIB
        raise InvalidOptionError(
            f"{flag}: at {bytes_per_s / MIB:.3g} MiB/s {what} the {checkpoint_bytes / GIB:.1f} GiB checkpoint takes "
            f"{_span(seconds)}, beyond the {MAX_PASS_SECONDS // 3600} h a start-up or staging deadline may wait "
            f"(a hung load would go unnoticed that long); give the measured rate, at least {least:.3g} MiB/s")


def _span(seconds: float) -> str:
    days = seconds / 86400
    return f"{days / 365:.1f} years" if days >= 365 else f"{days:.1f} days"


def check_load_rates(req: PlanRequest, load: LoadSource, checkpoint_bytes: int) -> None:
    """Each rate that sizes a deadline reads the checkpoint within a day (rate_bounds.py)."""
    load_flag = ("--load-bandwidth-mib-s" if req.load_bandwidth_mib_s else
                 "--fsx-throughput-per-tib, --fsx-storage-tib" if load.kind == "fsx" else "--load-bandwidth-mib-s")
    check_rate(load_flag, load.bandwidth, checkpoint_bytes, "loading")
    if req.cache_read_mib_s:
        check_rate("--cache-read-mib-s", int(req.cache_read_mib_s * MIB), checkpoint_bytes, "reading from the cache")
    if req.stage and req.stage_bandwidth_mib_s:
        check_rate("--stage-bandwidth-mib-s", int(req.stage_bandwidth_mib_s * MIB), checkpoint_bytes, "copying")

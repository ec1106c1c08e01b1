"""Where the weights come from (--model-source-kind) and how fast a pod reads them: the load
bandwidth the start-up budgets use, per source, with the basis `explain` prints
(docs/model-sources.md)."""

from __future__ import annotations

from dataclasses import dataclass

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.topology import ON_RAY
from vllm_eks.core.units import MIB
from vllm_eks.spec.model_source import ModelSourceKind
from vllm_eks.spec.request import PlanRequest

# Planning figures per source, MiB/s per pod. Each is a low, ordinary rate rather than a best
# case: a budget built on too high a rate kills a pod that is still loading, one built on too
# low a rate only detects a hung load later. --load-bandwidth-mib-s replaces them.
DEFAULT_LOAD_MIB_S: dict[str, tuple[int, str]] = {
    "huggingface": (400, "Hugging Face Hub download: a planning figure (the Hub's rate varies with region and "
                         "client; measure yours and pass --load-bandwidth-mib-s)"),
    "s3": (1000, "S3 read with many concurrent range requests (the Run:ai streamer's RUNAI_STREAMER_CONCURRENCY "
                 "readers, or Ray Serve LLM's threaded boto3 download): bounded by the node's network, a planning "
                 "figure below the network bandwidth of the GPU instances in the catalog"),
    "pvc": (125, "EBS gp3 baseline throughput (125 MiB/s), the slowest usual claim; EFS, FSx for Lustre and "
                 "provisioned gp3 read faster: give their rate"),
    "mountpoint-s3": (250, "Mountpoint for Amazon S3 through FUSE while vLLM's safetensors loader reads the files "
                           "(memory-mapped, not one sequential stream): a conservative planning figure"),
}
# FSx for Lustre: baseline throughput per TiB of storage for each deployment type's tier (SSD
# Persistent-1: 50/100/200, Persistent-2: 125/250/500/1000, Scratch-2: 200 MB/s per TiB), times
# the storage; the file system's whole throughput, shared by the pods loading at once.
FSX_TIERS_MB_S_PER_TIB = (50, 100, 125, 200, 250, 500, 1000)
DEFAULT_FSX_TIER_MB_S_PER_TIB = 250
DEFAULT_FSX_STORAGE_TIB = 1.2


@dataclass(frozen=True)
class LoadSource:
    """The resolved source of a request: its kind, whether the pod downloads the checkpoint to
    its cache volume before vLLM reads it, and the load bandwidth with its basis."""
    kind: ModelSourceKind
    downloads: bool
    bandwidth: int
    basis: str


def resolve_kind(req: PlanRequest) -> ModelSourceKind:
    """--model-source-kind, else the form of --model-source; a kind and a source that disagree
    are an error naming both flags."""
    kind = req.source.kind
    fsx_flags = [f for f, v in (("--fsx-throughput-per-tib", req.fsx_throughput_per_tib),
                                ("--fsx-storage-tib", req.fsx_storage_tib)) if v is not None]
    if fsx_flags and kind != "fsx":
        raise InvalidOptionError(f"{', '.join(fsx_flags)}: only with --model-source-kind fsx (the source is {kind})")
    return kind


def load_source(req: PlanRequest, topology: str) -> LoadSource:
    """The request's source with its load bandwidth: --load-bandwidth-mib-s, else the source's
    default. Hugging Face downloads the checkpoint to the cache volume first; so does S3 on the
    Ray topologies (Ray Serve LLM fetches an s3:// model_source with boto3 before vLLM starts)."""
    kind = resolve_kind(req)
    downloads = kind == "huggingface" or (kind == "s3" and topology in ON_RAY)
    if req.load_bandwidth_mib_s:
        bw = int(req.load_bandwidth_mib_s * MIB)
        if bw < 1:
            raise InvalidOptionError(f"--load-bandwidth-mib-s {req.load_bandwidth_mib_s:g}: below one byte per second")
        return LoadSource(kind, downloads, bw, "set by --load-bandwidth-mib-s")
    if kind == "fsx":
        tier = req.fsx_throughput_per_tib or DEFAULT_FSX_TIER_MB_S_PER_TIB
        tib = req.fsx_storage_tib or DEFAULT_FSX_STORAGE_TIB
        bw = int(tier * tib * 10**6)
        basis = (f"FSx for Lustre baseline {tier} MB/s per TiB x {tib:g} TiB "
                 f"({'--fsx-throughput-per-tib' if req.fsx_throughput_per_tib else 'default tier'}, "
                 f"{'--fsx-storage-tib' if req.fsx_storage_tib else 'smallest file system'}): the file system's "
                 "whole throughput, shared by the pods that load at once")
        return LoadSource(kind, downloads, bw, basis)
    mib_s, basis = DEFAULT_LOAD_MIB_S[kind]
    if kind == "s3" and downloads:
        basis = f"{basis}; on {topology} Ray Serve LLM downloads the checkpoint to the cache volume first"
    return LoadSource(kind, downloads, mib_s * MIB, f"default for --model-source-kind {kind}: {basis}")

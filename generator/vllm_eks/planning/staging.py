"""The staging section of the Plan (`--stage`): copy the model's Hugging Face repo once into S3 or a
PersistentVolumeClaim with charts/vllm-inference's staging Job, so the servers load the copy
instead of downloading from the Hub on every start.

Each number has a derivation for `explain`: the claim a chart-created PVC asks for (the weights
plus a margin), the expected copy time and the Job's activeDeadlineSeconds."""

from __future__ import annotations

import math
import re
from typing import Literal

from vllm_eks.core.derivations import Derivations
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.units import GIB, MIB, gib
from vllm_eks.spec.plan import StagingPlan
from vllm_eks.spec.s3 import s3_uri_problem

# The rate one staging pod downloads from the Hub at (4 files at a time through the Hub's CDN)
# unless --stage-bandwidth-mib-s says otherwise: below the 400 MiB/s the start-up budget assumes for
# a GPU node, since the staging pod runs on a general-purpose node with less network bandwidth.
DEFAULT_STAGE_BANDWIDTH_MIB_S = 200
# activeDeadlineSeconds = expected copy time x SAFETY + SETUP, rounded up to whole minutes: the Hub's
# rate varies by hour and region, and S3 uploads add a second pass over every file; SETUP is the
# image pull (the vLLM image is ~10 GB), the repo listing and the final sha256 checks.
DEADLINE_SAFETY = 3
DEADLINE_SETUP_SECONDS = 600
# The created claim: weights x (1 + MARGIN_FRACTION) + MARGIN_BYTES, in whole GiB. ext4 (the EBS CSI
# driver's default file system) keeps 5% of the blocks for root and the Job runs as a non-root
# user; inodes and journal take about 2% more; MARGIN_BYTES holds the repo's non-weight files
# (tokenizer, configs: tens of MiB) and one shard's .part file being verified, with room to spare.
MARGIN_FRACTION = 0.10
MARGIN_BYTES = 2 * GIB
# A claim name (DNS-1123 subdomain).
CLAIM = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def parse_stage(value: str) -> tuple[Literal["s3", "pvc"], str | None]:
    """--stage s3://BUCKET/PREFIX | pvc | pvc:CLAIM -> (target, URI or claim or None)."""
    if value.startswith("s3://"):
        if problem := s3_uri_problem(value):
            raise InvalidOptionError(f"--stage {value!r}: an S3 target is s3://BUCKET/PREFIX with a valid bucket "
                                     f"name; {problem}")
        return "s3", value.rstrip("/")
    if value == "pvc":
        return "pvc", None
    if value.startswith("pvc:") and CLAIM.match(value[4:]) and len(value) <= 4 + 253:
        return "pvc", value[4:]
    raise InvalidOptionError(f"--stage {value!r}: give s3://BUCKET/PREFIX, pvc (a claim the chart creates) "
                             "or pvc:CLAIM (an existing claim)")


def plan_staging(stage: str, revision: str, hf_repo: str | None, model_source: str, weights_bytes: int,
                 bandwidth_mib_s: float | None, source_kind: str = "pvc") -> StagingPlan:
    """The staging section for --stage, checked against what the servers load (--model-source of
    --model-source-kind `source_kind`)."""
    target, where = parse_stage(stage)
    if target == "pvc" and source_kind in ("fsx", "mountpoint-s3"):
        # the chart mounts the file system or bucket for the servers, never the staging claim
        raise InvalidOptionError(f"--stage {stage} copies into a claim the servers never mount: --model-source-kind "
                                 f"{source_kind} mounts its own volume; stage with --model-source-kind pvc, or load "
                                 f"the {source_kind} volume without --stage")
    if not hf_repo:
        raise InvalidOptionError("--stage copies a Hugging Face repo, and --model names a local config.json with none: "
                                 "give a catalog model")
    if target == "s3" and model_source.rstrip("/") != where:
        raise InvalidOptionError(f"--stage {where} stages what the servers load: give --model-source {where} "
                                 f"(it is {model_source!r})")
    if target == "pvc" and not model_source.startswith("/"):
        raise InvalidOptionError(f"--stage {stage} needs --model-source /models/<dir>, the path the servers load the "
                                 f"staged copy from (it is {model_source!r})")
    d = Derivations()
    bw = int((bandwidth_mib_s or DEFAULT_STAGE_BANDWIDTH_MIB_S) * MIB)
    copy = math.ceil(weights_bytes / bw)
    d.add("staging_copy_seconds", f"{copy} s", f"{weights_bytes / GIB:.1f} GiB / {bw / MIB:.0f} MiB/s",
          "set by --stage-bandwidth-mib-s" if bandwidth_mib_s else
          f"default {DEFAULT_STAGE_BANDWIDTH_MIB_S} MiB/s: one pod on a general-purpose node (staging.py)")
    deadline = math.ceil((copy * DEADLINE_SAFETY + DEADLINE_SETUP_SECONDS) / 60) * 60
    d.add("staging_deadline_seconds", f"{deadline} s",
          f"{copy} s x {DEADLINE_SAFETY} + {DEADLINE_SETUP_SECONDS} s set-up, rounded up to a minute",
          "the Job's activeDeadlineSeconds: the Hub's rate varies; set-up is the image pull, listing and checks")
    claim_bytes = None
    if target == "pvc" and where is None:
        claim_bytes = math.ceil((weights_bytes * (1 + MARGIN_FRACTION) + MARGIN_BYTES) / GIB) * GIB
        d.add("staging_claim_bytes", gib(claim_bytes),
              f"{weights_bytes / GIB:.1f} GiB x {1 + MARGIN_FRACTION:.2f} + {MARGIN_BYTES // GIB} GiB, whole GiB",
              "ext4 keeps 5% for root (the Job is non-root) and ~2% for metadata; 2 GiB for tokenizer/config "
              "files and a shard being verified")
    return StagingPlan(staging_target=target, staging_repo=hf_repo, staging_revision=revision,
                       staging_s3_uri=where if target == "s3" else None,
                       staging_claim_name=where if target == "pvc" else None,
                       staging_weights_bytes=weights_bytes, staging_claim_bytes=claim_bytes,
                       staging_bandwidth_bytes_per_s=bw, staging_copy_seconds=copy, staging_deadline_seconds=deadline,
                       derivations=d.items)

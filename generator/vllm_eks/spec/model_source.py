"""What vLLM loads and how the pod reaches it: the source kinds and the one rule between a kind
and its URI, used by the planner (--model-source-kind with --model-source) and by the values
builder (a Plan's source written into model.source / model.name). The chart checks the same rule
on hand-edited values (charts/vllm-inference: model.source and model.name)."""

from __future__ import annotations

from typing import Literal

from vllm_eks.core.errors import InvalidOptionError

ModelSourceKind = Literal["huggingface", "s3", "pvc", "fsx", "mountpoint-s3"]
# The kinds that mount a volume; their URI is an absolute path on it.
VOLUME_KINDS: tuple[ModelSourceKind, ...] = ("pvc", "fsx", "mountpoint-s3")


def kind_of(uri: str | None) -> ModelSourceKind:
    """The kind a URI's form implies: an s3:// URI is streamed from S3, an absolute path is a
    mounted volume (pvc unless a kind says fsx or mountpoint-s3), anything else is a Hugging Face
    repo id downloaded into the pod."""
    source = uri or ""
    if source.startswith("s3://"):
        return "s3"
    return "pvc" if source.startswith("/") else "huggingface"


def resolve_kind(kind: ModelSourceKind | None, uri: str | None) -> ModelSourceKind:
    """The given kind, else the URI's; a kind and a URI that disagree are an error naming both
    flags."""
    implied = kind_of(uri)
    resolved = kind or implied
    source = uri or ""
    if resolved == "s3" and not source.startswith("s3://"):
        raise InvalidOptionError("--model-source-kind s3 needs --model-source s3://bucket/prefix")
    if resolved in VOLUME_KINDS and not source.startswith("/"):
        raise InvalidOptionError(f"--model-source-kind {resolved} needs --model-source with an absolute path on the "
                                 "mounted volume, e.g. /models/org/name")
    if resolved == "huggingface" and implied != "huggingface":
        raise InvalidOptionError(f"--model-source {source}: a Hugging Face source takes a repo id; use "
                                 f"--model-source-kind {implied if implied == 's3' else 'pvc, fsx or mountpoint-s3'}")
    return resolved

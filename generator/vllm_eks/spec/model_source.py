"""What vLLM loads and how the pod reaches it: the source kinds, and `ModelSource`, the one
sub-model of a source that the planner (--model-source-kind with --model-source) and the values
builder (a Plan's `pod.model_source_kind` with its `model_source`) both build, so the rule between
a kind and its URI is checked in one place. The chart checks the same rule on hand-edited values
(charts/vllm-inference: model.source and model.name)."""

from __future__ import annotations

from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.spec.s3 import s3_uri_problem

ModelSourceKind = Literal["huggingface", "s3", "pvc", "fsx", "mountpoint-s3"]
# The kinds that mount a volume; their URI is an absolute path on it.
VOLUME_KINDS: tuple[ModelSourceKind, ...] = ("pvc", "fsx", "mountpoint-s3")


class SourceNames(NamedTuple):
    """How an error spells the kind and the URI: the way the user gave them."""
    kind: str
    uri: str


FLAGS = SourceNames("--model-source-kind", "--model-source")
PLAN_KEYS = SourceNames("pod.model_source_kind", "model_source")


def kind_of(uri: str | None) -> ModelSourceKind:
    """The kind a URI's form implies: an s3:// URI is streamed from S3, an absolute path is a
    mounted volume (pvc unless a kind says fsx or mountpoint-s3), anything else is a Hugging Face
    repo id downloaded into the pod."""
    source = uri or ""
    if source.startswith("s3://"):
        return "s3"
    return "pvc" if source.startswith("/") else "huggingface"


class ModelSource(BaseModel):
    """A source whose kind fits its URI. Build it with `resolve` (the kind defaults to the URI's
    form); a kind and a URI that disagree are refused in one line naming both inputs."""
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ModelSourceKind
    uri: str = ""

    @property
    def mounts_volume(self) -> bool:
        return self.kind in VOLUME_KINDS

    @classmethod
    def resolve(cls, kind: ModelSourceKind | None, uri: str | None, names: SourceNames = FLAGS) -> ModelSource:
        return cls.model_validate({"kind": kind or kind_of(uri), "uri": uri or ""}, context={"names": names})

    @model_validator(mode="after")
    def _kind_fits_uri(self, info: ValidationInfo) -> ModelSource:
        names: SourceNames = (info.context or {}).get("names", FLAGS)
        implied = kind_of(self.uri)
        if self.kind == "s3" and implied != "s3":
            raise InvalidOptionError(f"{names.kind} s3 needs {names.uri} s3://bucket/prefix")
        if self.kind == "s3" and (problem := s3_uri_problem(self.uri)):
            raise InvalidOptionError(f"{names.uri} {self.uri!r}: {problem}")
        if self.mounts_volume and implied != "pvc":
            raise InvalidOptionError(f"{names.kind} {self.kind} needs {names.uri} with an absolute path on the "
                                     "mounted volume, e.g. /models/org/name")
        if self.kind == "huggingface" and implied != "huggingface":
            raise InvalidOptionError(f"{names.uri} {self.uri}: a Hugging Face source takes a repo id; use "
                                     f"{names.kind} {implied if implied == 's3' else 'pvc, fsx or mountpoint-s3'}")
        return self

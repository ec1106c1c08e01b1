"""The Hugging Face token's Secret reference, one shape for every pod that reads the Hub (the model
servers' model.huggingface.tokenSecret, the staging Job's staging.tokenSecret): the chart renders
it with one helper (vllm-inference.hfTokenEnv / hfTokenVolume in _pod.tpl)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from vllm_eks.values.base import OPTIONAL_DNS1123_SUBDOMAIN, ValuesModel

# Characters a Secret data key may contain (Kubernetes: [-._a-zA-Z0-9]+).
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"


class TokenSecret(ValuesModel):
    name: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, description=(
        "Existing Secret holding the Hugging Face token; empty for public models. The token "
        "itself never goes into values"))
    key: str = Field("HF_TOKEN", pattern=SECRET_KEY, description="Key of the token inside that Secret")
    mount_as: Literal["env", "file"] = Field("env", description=(
        "env: HF_TOKEN from secretKeyRef. file: the key mounted read-only and HF_TOKEN_PATH "
        "pointing at it (keeps the token out of the process environment)"))
    optional: bool = Field(True, description=(
        "true: the pod starts without that Secret (public models need no token). false: a missing "
        "Secret keeps the pod from starting (CreateContainerConfigError), for gated models"))

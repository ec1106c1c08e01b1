# Chart packages and where a release puts them.
#
# `make package` writes each chart's .tgz (an umbrella with its dependencies) into $(PACKAGE_DIR)
# with the pinned Helm 4. tools/package_charts.py is the one packaging step: the cluster tier
# installs what it builds and the release workflow (.github/workflows/release.yaml) pushes what it
# builds with tools/push_charts.py. Nothing is signed: a provenance file needs the release's GPG
# key, which only the release pipeline holds (docs/releasing.md).
#
# The cluster tier pushes the packages to a local OCI registry and installs the README's commands
# from it: go-containerregistry's in-memory registry (cmd/registry), built from its Go module.

PACKAGE_DIR ?= dist/charts
OCI_REGISTRY_MODULE := github.com/google/go-containerregistry
OCI_REGISTRY_VERSION := v0.22.1
OCI_REGISTRY_DIR := $(TOOLS)/oci-registry/$(OCI_REGISTRY_VERSION)
export VLLM_EKS_OCI_REGISTRY := $(TOOLS)/bin/oci-registry

CLUSTER_SETUP_TARGETS += oci-registry

.PHONY: package push-charts oci-registry
package: venv helm ## package every chart into dist/charts (PACKAGE_DIR) as the release pushes them
	rm -rf $(PACKAGE_DIR)
	HELM=$(TOOLS)/bin/helm4 $(BIN)/python tools/package_charts.py --out $(PACKAGE_DIR)

push-charts: venv helm ## push dist/charts/*.tgz to CHART_REGISTRY (oci://HOST/PATH; `helm registry login` first)
	@test -n "$(CHART_REGISTRY)" || { echo "push-charts: set CHART_REGISTRY=oci://HOST/PATH" >&2; exit 2; }
	HELM=$(TOOLS)/bin/helm4 $(BIN)/python tools/push_charts.py --registry $(CHART_REGISTRY) $(PACKAGE_DIR)/*.tgz

oci-registry: $(OCI_REGISTRY_DIR)/registry ## build (or check) the local OCI registry the cluster tier pushes the chart packages to
	@ln -sfn $(OCI_REGISTRY_DIR)/registry $(VLLM_EKS_OCI_REGISTRY)

$(OCI_REGISTRY_DIR)/registry:
	@mkdir -p $(OCI_REGISTRY_DIR) $(TOOLS)/bin
	@start=$$(date +%s); \
	  GOBIN=$(OCI_REGISTRY_DIR) CGO_ENABLED=0 go install -trimpath $(OCI_REGISTRY_MODULE)/cmd/registry@$(OCI_REGISTRY_VERSION); \
	  echo "<<< built oci-registry $(OCI_REGISTRY_VERSION) ($(OCI_REGISTRY_MODULE)/cmd/registry) in $$(( $$(date +%s) - start ))s"

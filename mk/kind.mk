# kind tier (tests/kind, marker `kind`): for machines with a container engine (users' CI, see
# .github/workflows/kind.yaml). Not part of `make test`: there is no container engine here, and
# tests/kind skips itself with that reason.
#
# kind comes from its Go module (sigs.k8s.io/kind has no replace directives, so `go install`
# works); KIND_NODE_IMAGE overrides the node image of the pinned release.

KIND_VERSION := v0.32.0
KIND_BIN := $(TOOLS)/bin/kind
# The kind tier's target is e2e-kind (it creates and deletes the cluster around pytest).
TEST_TIERS += kind
TEST_ARGS_kind := -m kind tests/kind

.PHONY: kind-tool e2e-kind
kind-tool: $(KIND_BIN) ## install the pinned kind into .tools/bin
$(KIND_BIN):
	@mkdir -p $(@D)
	CGO_ENABLED=0 GOBIN=$(@D) go install sigs.k8s.io/kind@$(KIND_VERSION)

e2e-kind: venv helm kind-tool ## the kind tier: a kind cluster, the charts and a completion (needs a container engine)
	KIND=$(KIND_BIN) PYTEST=$(BIN)/pytest tools/cluster/e2e-kind.sh $(TEST_ARGS_kind)

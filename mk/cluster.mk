# Cluster tier (tests/cluster, marker `cluster`): a real kube-apiserver, kube-controller-manager,
# kube-scheduler and etcd with kwok's simulated GPU nodes, all built from their Go modules at the
# pins in tools/cluster/versions.env (see tests/cluster/README.md).
#
# tools/cluster/build.sh is a fast no-op when the stamped binaries match the pins, so it runs
# every time; it prints what it builds and how long each binary took.

CLUSTER_BIN := $(TOOLS)/cluster/bin
export VLLM_EKS_CLUSTER_BIN := $(CLUSTER_BIN)

CLUSTER_SETUP_TARGETS += cluster-tools
TEST_TIERS += cluster
TEST_ARGS_cluster := -m cluster tests/cluster

.PHONY: cluster-tools test-cluster
cluster-tools: ## build (or check) the pinned Kubernetes control plane, kwok, KEDA, KubeRay operator and LeaderWorkerSet controller binaries
	@CLUSTER_BIN=$(CLUSTER_BIN) tools/cluster/build.sh

test-cluster: setup cluster-tools ## only the cluster tier: charts installed on a local control plane with kwok nodes
	$(BIN)/pytest $(TEST_ARGS_cluster)

"""Names of other projects' APIs that the generator and `vllm-eks check-fit` read or write, and
the NodePool name the generator gives each GPU pool.

The label keys and resource names below belong to Kubernetes, Karpenter, the NVIDIA and EFA
device plugins and LeaderWorkerSet, not to this project: they are kept here because Python code
needs them (check-fit derives a node's labels and capacity from them). The project's own contract
strings (the node label the GPU pools carry and the model-server pods select on, the GPU taint,
the serving port, the health and metrics paths, the component label values) live in the chart
templates only; Python tests read them from rendered output (tests/harness/chart_contract.py),
and tests/unit/test_contract_strings.py fails when one of them is also defined under generator/."""

import hashlib

# Well-known labels set by the kubelet and Karpenter.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
# Karpenter's own GPU labels (device plugins select on these, not on NFD labels).
GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
GPU_NAME_LABEL = "karpenter.k8s.aws/instance-gpu-name"

# Extended resources advertised by the NVIDIA and EFA device plugins.
GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"

# Label the LeaderWorkerSet controller puts on pods: worker index "0" is the leader.
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


# Longest Kubernetes label value (the pool name is a node label value).
LABEL_VALUE_MAX = 63


def pool_name(instance: str, release: str, namespace: str) -> str:
    """Name of the GPU pool of one vllm-inference release: the NodePool, its EC2NodeClass and the
    value of the pool label its nodes carry, e.g. p5.48xlarge for release vllm in llm -> llm-vllm-p5-48xlarge.

    NodePools and EC2NodeClasses are cluster-scoped, so a name per instance type would make the
    second model on the same instance type (its own gpu-infra release) claim the first one's
    objects; namespace + release is unique in a cluster, so every model server gets its own pool
    (and its own GPU limit). A name over 63 characters keeps its first 54 and a hash of the whole."""
    name = f"{namespace}-{release}-{instance.replace('.', '-').lower()}"
    if len(name) <= LABEL_VALUE_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:LABEL_VALUE_MAX - 9].rstrip('-')}-{digest}"

"""Names of other projects' APIs that the generator and `vllm-eks check-fit` read or write, and
the NodePool name the generator gives each GPU pool.

The label keys and resource names below belong to Kubernetes, Karpenter, the NVIDIA and EFA
device plugins and LeaderWorkerSet, not to this project: they are kept here because Python code
needs them (check-fit derives a node's labels and capacity from them). The project's own contract
strings (the node label the GPU pools carry and the model-server pods select on, the GPU taint,
the serving port, the health and metrics paths, the component label values) live in the chart
templates only; Python tests read them from rendered output (tests/harness/chart_contract.py),
and tests/unit/test_contract_strings.py fails when one of them is also defined under generator/."""

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


def pool_name(instance: str) -> str:
    """NodePool name for an instance type: DNS-1123, e.g. p5.48xlarge -> gpu-p5-48xlarge.
    A value the generator writes (gpu-infra pools[].name, vllm-inference scheduling.pool)."""
    return "gpu-" + instance.replace(".", "-").lower()

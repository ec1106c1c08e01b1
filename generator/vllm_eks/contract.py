"""Names the charts agree on. The generator writes these into every chart's values, so the
model-server pods, the NodePools and the monitors read one source instead of repeating strings."""

import hashlib

# Label Karpenter puts on every node of a NodePool (from the NodePool template's labels);
# the model-server pods select on it.
POOL_LABEL = "vllm-eks.io/pool"
# Well-known label set by Karpenter and the kubelet.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
# Karpenter's own GPU labels (device plugins select on these, not on NFD labels).
GPU_COUNT_LABEL = "karpenter.k8s.aws/instance-gpu-count"
GPU_NAME_LABEL = "karpenter.k8s.aws/instance-gpu-name"

GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_EFFECT = "NoSchedule"

# The OpenAI-compatible server of vLLM.
SERVING_PORT = 8000
SERVING_PORT_NAME = "http"
METRICS_PATH = "/metrics"
HEALTH_PATH = "/health"

# Component label values (app.kubernetes.io/component) of vllm-inference objects.
COMPONENT_SERVER = "server"
COMPONENT_PREFILL = "prefill"
COMPONENT_DECODE = "decode"

# Label the LeaderWorkerSet controller puts on pods: worker index "0" is the leader.
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


# Longest Kubernetes label value (the pool name is the value of POOL_LABEL on every node).
LABEL_VALUE_MAX = 63


def pool_name(instance: str, release: str, namespace: str) -> str:
    """Name of the GPU pool of one vllm-inference release: the NodePool, its EC2NodeClass and the
    POOL_LABEL value its nodes carry, e.g. p5.48xlarge for release vllm in llm -> llm-vllm-p5-48xlarge.

    NodePools and EC2NodeClasses are cluster-scoped, so a name per instance type would make the
    second model on the same instance type (its own gpu-infra release) claim the first one's
    objects; namespace + release is unique in a cluster, so every model server gets its own pool
    (and its own GPU limit). A name over 63 characters keeps its first 54 and a hash of the whole."""
    name = f"{namespace}-{release}-{instance.replace('.', '-').lower()}"
    if len(name) <= LABEL_VALUE_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:LABEL_VALUE_MAX - 9].rstrip('-')}-{digest}"

"""Names the charts agree on. The generator writes these into every chart's values, so the
model-server pods, the NodePools and the monitors read one source instead of repeating strings."""

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


def pool_name(instance: str) -> str:
    """NodePool name for an instance type: DNS-1123, e.g. p5.48xlarge -> gpu-p5-48xlarge."""
    return "gpu-" + instance.replace(".", "-").lower()

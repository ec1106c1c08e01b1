"""Numbers for the pool and the autoscaler that follow from the layout: how far the serving
workload may scale, how many nodes and GPUs the NodePool must admit for that, the node's root
volume, and the queue depth that means the autoscaler is not keeping up."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .units import GIB

# Root volume: the OS and kubelet state, the serving image (vLLM CUDA images are 10-20 GiB
# compressed, about twice that unpacked), then the model cache the pod keeps as ephemeral storage.
OS_DISK_BYTES = 20 * GIB
IMAGE_DISK_BYTES = 30 * GIB
# KEDA aims at this many waiting requests per replica (the 70B-on-EKS guide); the queue alert fires at
# twice that or a quarter of the running batch, whichever is more.
KEDA_QUEUE_TARGET = 5
# HPA scaling-policy periods must stay within 1800 s.
HPA_MAX_PERIOD_SECONDS = 1800


@dataclass(frozen=True)
class Capacity:
    min_replicas: int
    max_replicas: int
    max_replicas_why: str
    pool_nodes: int
    pool_gpu_limit: int
    root_volume_bytes: int
    queue_alert_threshold: int
    scale_up_period_seconds: int


def plan_pools(*, topology: str, replicas: int, serve_max: int | None, prefill_replicas: int | None,
                  decode_replicas: int | None, nodes_per_replica: int, gpus_per_pod: int, gpus_per_node: int,
                  ephemeral_bytes: int, max_num_seqs: int, startup_seconds: int) -> Capacity:
    floor = max(1, replicas)
    if prefill_replicas is not None and decode_replicas is not None:
        ceiling = prefill_replicas + decode_replicas
        why = "prefill + decode pools (each pool is sized, not autoscaled)"
    elif serve_max is not None:
        ceiling = max(floor, serve_max)
        why = "Ray Serve's autoscaling maximum"
    else:
        ceiling = max(floor + 3, 2 * floor)
        why = f"max(replicas {floor} + 3, 2 x replicas): KEDA may double capacity under a queue"
    if nodes_per_replica > 1 or gpus_per_pod >= gpus_per_node:
        nodes = ceiling * nodes_per_replica
    else:
        nodes = math.ceil(ceiling / max(1, gpus_per_node // gpus_per_pod))
    # One replica group of headroom: Karpenter launches a replacement node before it drains a
    # drifted or expired one, and a surge pod needs room; at exactly the peak both would stall.
    gpu_limit = (nodes + nodes_per_replica) * gpus_per_node
    root = math.ceil((OS_DISK_BYTES + IMAGE_DISK_BYTES + ephemeral_bytes) / (10 * GIB)) * 10 * GIB
    return Capacity(
        min_replicas=floor, max_replicas=ceiling, max_replicas_why=why, pool_nodes=nodes,
        pool_gpu_limit=gpu_limit, root_volume_bytes=root,
        queue_alert_threshold=max(2 * KEDA_QUEUE_TARGET, math.ceil(max_num_seqs / 4)),
        scale_up_period_seconds=min(HPA_MAX_PERIOD_SECONDS, max(60, startup_seconds)),
    )

"""Pool arithmetic: how far the serving workload may scale, how many nodes and GPUs the
NodePool must admit for that, the node's root volume, the queue depth that means the
autoscaler is not keeping up, and what one replica costs."""

from __future__ import annotations

import math
from decimal import Decimal

from vllm_eks.catalog.instances import Hardware
from vllm_eks.core.derivations import Derivations
from vllm_eks.core.units import GIB, gib, gib_exact
from vllm_eks.spec.plan import CostPlan, PoolPlan

# Root volume: the OS and kubelet state, the serving image (vLLM CUDA images are 10-20 GiB
# compressed, about twice that unpacked), then the model cache the pod keeps as ephemeral storage.
OS_DISK_BYTES = 20 * GIB
IMAGE_DISK_BYTES = 30 * GIB
# KEDA aims at this many waiting requests per replica (the 70B-on-EKS guide); the queue alert fires at
# twice that or a quarter of the running batch, whichever is more.
KEDA_QUEUE_TARGET = 5
# HPA scaling-policy periods must stay within 1800 s; below a minute the HPA would add replicas
# faster than one can start.
HPA_MAX_PERIOD_SECONDS = 1800
HPA_MIN_PERIOD_SECONDS = 60
# Without a Serve or phase ceiling KEDA may grow the workload to this.
KEDA_HEADROOM_REPLICAS = 3
KEDA_GROWTH_FACTOR = 2
ROOT_VOLUME_STEP = 10 * GIB
# gp3: 3,000 IOPS and 125 MiB/s come with every volume; up to 16,000 and 1,000 MiB/s are paid for.
# Weights read from the root volume get the maximum; with RAID0 the volume only boots the OS.
GP3_BASELINE = (3000, 125)
GP3_MAXIMUM = (16000, 1000)
# Karpenter's defaults for the kubelet's ephemeral storage: kube-reserved 1Gi, eviction at
# nodefs.available<10% (also used by check/scheduling.py).
EPHEMERAL_KUBE_RESERVED_BYTES = 1 * GIB
EPHEMERAL_EVICTION_FRACTION = Decimal("0.10")


def plan_pools(*, replicas: int, serve_max: int | None, phase_replicas: tuple[int, int] | None,
               nodes_per_replica: int, gpus_per_pod: int, gpus_per_node: int, ephemeral_bytes: int,
               max_num_seqs: int, startup_seconds: int, local_nvme_bytes: int = 0,
               serve_min: int = 1, keda_target: int | None = None) -> PoolPlan:
    """The pool section of the Plan: the autoscaling range, the nodes and GPUs the NodePool
    must admit for it, the root volume and the queue alert, with their derivations.
    `phase_replicas` is (prefill, decode) of a disaggregated deployment; `serve_min` is Ray
    Serve's min_replicas (ray-serve), the copies a new RayCluster starts with; `keda_target` the
    KEDA threshold a benchmark sweep measured (default KEDA_QUEUE_TARGET)."""
    d = Derivations()
    floor = max(1, replicas)
    if phase_replicas is not None:
        # Both pools run all the time: the floor is every prefill and decode copy, not the decode
        # count alone.
        floor = ceiling = sum(phase_replicas)
        why = "prefill + decode pools (each pool is sized, not autoscaled)"
    elif serve_max is not None:
        ceiling = max(floor, serve_max)
        why = "Ray Serve's autoscaling maximum"
    else:
        ceiling = max(floor + KEDA_HEADROOM_REPLICAS, KEDA_GROWTH_FACTOR * floor)
        why = (f"max(replicas {floor} + {KEDA_HEADROOM_REPLICAS}, {KEDA_GROWTH_FACTOR} x replicas): "
               "KEDA may double capacity under a queue")
    d.add("autoscaling_min_replicas / autoscaling_max_replicas", f"{floor}..{ceiling}",
          f"min = max = {why}" if phase_replicas is not None else f"min = replicas; max = {why}")
    nodes = _nodes_for(ceiling, nodes_per_replica, gpus_per_pod, gpus_per_node)
    d.add("pool_nodes", str(nodes), f"{ceiling} replicas x {nodes_per_replica} node(s), sharing nodes when a pod "
          f"uses {gpus_per_pod} of {gpus_per_node} GPUs")
    # Headroom above the peak. Deployment / LeaderWorkerSet: one replica group, because Karpenter
    # launches a replacement node before it drains a drifted or expired one, and a surge pod needs
    # room. Ray topologies: a RayService upgrade (upgradeStrategy NewCluster, which the chart sets)
    # builds a whole second RayCluster beside the serving one and switches only when its Serve
    # applications run, so the pool must admit that cluster's starting workers on top of the peak.
    if phase_replicas is not None or serve_max is not None:
        start = sum(phase_replicas) if phase_replicas is not None else max(1, serve_min)
        extra = ray_upgrade_nodes(start, nodes_per_replica, gpus_per_pod, gpus_per_node)
        what = "the upgrade's second RayCluster"
        copies = "every prefill and decode copy" if phase_replicas else "Serve min_replicas"
        why_extra = f"{start} starting model copies ({copies}) -> {extra} node(s)"
        note = ("KubeRay's NewCluster upgrade runs the new RayCluster beside the serving one until its Serve "
                "applications are ready; without these GPUs the upgrade stays pending")
    else:
        extra = nodes_per_replica
        what = "one replica group"
        why_extra = f"{nodes_per_replica} node(s)"
        note = "Karpenter counts whole nodes; the extra group lets a replacement node or a surge pod start"
    gpu_limit = (nodes + extra) * gpus_per_node
    d.add("pool_gpu_limit", str(gpu_limit),
          f"(pool nodes {nodes} + {what}: {why_extra}) x {gpus_per_node} GPUs", note)
    policy, root, (iops, throughput) = _root_volume(d, ephemeral_bytes * _pods_per_node(
        nodes_per_replica, gpus_per_pod, gpus_per_node), ephemeral_bytes, local_nvme_bytes)
    target, target_what = ((KEDA_QUEUE_TARGET, "KEDA target") if keda_target is None
                           else (keda_target, "measured KEDA target"))
    queue = max(2 * target, math.ceil(max_num_seqs / 4))
    d.add("queue_alert_threshold", str(queue), f"max(2 x {target_what} {target}, max_num_seqs {max_num_seqs} / 4)",
          "the queue alert means autoscaling is not keeping up, not that it is about to act")
    period = min(HPA_MAX_PERIOD_SECONDS, max(HPA_MIN_PERIOD_SECONDS, startup_seconds))
    d.add("scale_up_period_seconds", f"{period} s",
          f"startup probe budget, within [{HPA_MIN_PERIOD_SECONDS}, {HPA_MAX_PERIOD_SECONDS}] s",
          "new replicas serve before the HPA adds more")
    return PoolPlan(autoscaling_min_replicas=floor, autoscaling_max_replicas=ceiling, pool_nodes=nodes,
                    pool_gpu_limit=gpu_limit, root_volume_bytes=root, instance_store_policy=policy,
                    root_volume_iops=iops, root_volume_throughput_mib_s=throughput, queue_alert_threshold=queue,
                    scale_up_period_seconds=period, derivations=d.items)


def nodes_for(replicas: int, nodes_per_replica: int, gpus_per_pod: int, gpus_per_node: int) -> int:
    """Nodes that `replicas` model copies occupy (pods share a node when each uses part of it)."""
    return math.ceil(replicas * nodes_per_replica / _pods_per_node(nodes_per_replica, gpus_per_pod, gpus_per_node))


_nodes_for = nodes_for


def ray_upgrade_nodes(start: int, nodes_per_replica: int, gpus_per_pod: int, gpus_per_node: int) -> int:
    """Nodes the second RayCluster of a NewCluster upgrade takes: its `start` model copies, at
    least one replica group."""
    return max(nodes_per_replica, nodes_for(start, nodes_per_replica, gpus_per_pod, gpus_per_node))


def _pods_per_node(nodes_per_replica: int, gpus_per_pod: int, gpus_per_node: int) -> int:
    return 1 if nodes_per_replica > 1 or gpus_per_pod >= gpus_per_node else gpus_per_node // gpus_per_pod


def _root_volume(d: Derivations, node_ephemeral: int, pod_ephemeral: int,
                 local_nvme_bytes: int) -> tuple[str | None, int, tuple[int, int]]:
    """Instance store policy, root volume size and gp3 (IOPS, MiB/s). With RAID0 over the local
    NVMe disks, Karpenter puts the kubelet's and containerd's storage on the array (EC2NodeClass
    instanceStorePolicy), so the pods' ephemeral storage is there and the root volume boots the
    OS; RAID0 is chosen when the array holds every pod's ephemeral storage after the kubelet's
    reserve and eviction threshold."""
    usable = int(local_nvme_bytes * (1 - EPHEMERAL_EVICTION_FRACTION)) - EPHEMERAL_KUBE_RESERVED_BYTES
    step = ROOT_VOLUME_STEP
    if local_nvme_bytes and node_ephemeral <= usable:
        root = math.ceil((OS_DISK_BYTES + IMAGE_DISK_BYTES) / step) * step
        d.add("instance_store_policy", "RAID0", f"ephemeral {gib(node_ephemeral)} per node fits the NVMe array "
              f"({gib(local_nvme_bytes)} - 10% eviction threshold - "
              f"{gib_exact(EPHEMERAL_KUBE_RESERVED_BYTES)} kube-reserved)",
              "kubelet and containerd use the array")
        d.add("root_volume_bytes", gib(root), f"{gib_exact(OS_DISK_BYTES)} OS + {gib_exact(IMAGE_DISK_BYTES)} image, "
              f"rounded up to {gib_exact(step)}; gp3 baseline {GP3_BASELINE[0]} IOPS, {GP3_BASELINE[1]} MiB/s",
              "the pods' storage is on the NVMe array")
        return "RAID0", root, GP3_BASELINE
    root = math.ceil((OS_DISK_BYTES + IMAGE_DISK_BYTES + pod_ephemeral) / step) * step
    why = "no local NVMe disks" if not local_nvme_bytes else f"the NVMe array ({gib(local_nvme_bytes)}) is too small"
    d.add("instance_store_policy", "none", why, "kubelet and containerd stay on the root volume")
    d.add("root_volume_bytes", gib(root),
          f"{gib_exact(OS_DISK_BYTES)} OS + {gib_exact(IMAGE_DISK_BYTES)} image + ephemeral {gib(pod_ephemeral)}, "
          f"rounded up to {gib_exact(step)}; gp3 {GP3_MAXIMUM[0]} IOPS, {GP3_MAXIMUM[1]} MiB/s for weight reads")
    return None, root, GP3_MAXIMUM


def plan_cost(hw: Hardware, nodes_per_replica: int, gpus_per_pod: int) -> CostPlan:
    """On-demand price of one replica: its nodes, or its share of one node's GPUs."""
    if hw.usd_per_hour is None:
        return CostPlan(cost_per_hour_usd=None)
    cost = round(hw.usd_per_hour * nodes_per_replica * gpus_per_pod / hw.gpus_per_node, 4)
    d = Derivations()
    d.add("cost_per_hour_usd", f"${cost:.2f}",
          f"${hw.usd_per_hour}/h x {nodes_per_replica} node(s) x {gpus_per_pod}/{hw.gpus_per_node} GPUs",
          hw.price_source or "on-demand us-east-1 (override with --price-per-hour)")
    return CostPlan(cost_per_hour_usd=cost, derivations=d.items)

"""The four serving topologies and the rules that follow from a topology alone."""

from __future__ import annotations

from typing import Literal

Topology = Literal["single-node", "multi-node", "ray-serve", "disaggregated"]

# KEDA scales the workload object of these topologies (Deployment, LeaderWorkerSet); Ray Serve
# scales its own replicas inside a RayCluster, and disaggregated pools are sized, not scaled.
KEDA_SCALED: tuple[Topology, ...] = ("single-node", "multi-node")


def keda_scales(topology: str) -> bool:
    return topology in KEDA_SCALED


# Topologies whose engines run inside Ray Serve LLM (a KubeRay RayService) instead of `vllm serve`.
ON_RAY: tuple[Topology, ...] = ("ray-serve", "disaggregated")

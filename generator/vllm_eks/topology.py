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


def model_source_refusal(topology: str, kind: str) -> str | None:
    """Why charts/vllm-inference cannot load weights of this kind on this topology, or None.

    An s3:// model is streamed by vLLM's runai_streamer load format, which the chart passes as
    `--load-format` to `vllm serve` (single-node, multi-node) only; on the Ray topologies the
    weights come from Ray Serve LLM's model_source, a repo id or a path. The chart's validate
    helper (templates/_validate.tpl, validateValues.rayModelSource) refuses the same values written by hand."""
    if kind == "s3" and topology in ON_RAY:
        return (f"--model-source s3://... is streamed with vLLM's runai_streamer only on single-node and multi-node; "
                f"with --topology {topology} load a Hugging Face repo id or a mounted path "
                "(--model-source /models/... --pvc-name NAME), or use --topology auto")
    return None

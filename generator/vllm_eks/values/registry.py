"""Chart name -> builder of that chart's values from a Plan, and the values keys each chart
reads only for some topologies (dotted path -> those topologies). One line per chart."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from vllm_eks.spec.plan import Plan
from vllm_eks.values.gpu_infra import build_values as _gpu_infra
from vllm_eks.values.observability import TOPOLOGY_SECTIONS as _obs_sections
from vllm_eks.values.observability import build_values as _observability
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import TOPOLOGY_SECTIONS as _vllm_sections
from vllm_eks.values.vllm_inference.chart import build_values as _vllm_inference

ChartBuilder = Callable[[Plan, ValuesOptions], BaseModel]

CHART_BUILDERS: dict[str, ChartBuilder] = {
    "gpu-infra": _gpu_infra,
    "vllm-inference": _vllm_inference,
    "observability": _observability,
}
TOPOLOGY_KEYS: dict[str, dict[str, frozenset[str]]] = {
    "vllm-inference": _vllm_sections,
    "observability": _obs_sections,
}

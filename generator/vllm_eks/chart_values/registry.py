"""Chart name -> builder of that chart's values from a Plan, and the values keys each chart
reads only for some topologies (dotted path -> those topologies). One line per chart."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from ..plan import Plan
from .options import ValuesOptions

ChartBuilder = Callable[[Plan, ValuesOptions], BaseModel]

CHART_BUILDERS: dict[str, ChartBuilder] = {}
TOPOLOGY_KEYS: dict[str, dict[str, frozenset[str]]] = {}

from .gpu_infra import build_values as _gpu_infra  # noqa: E402
CHART_BUILDERS["gpu-infra"] = _gpu_infra
from .vllm_inference import TOPOLOGY_SECTIONS as _vllm_sections, build_values as _vllm_inference  # noqa: E402
CHART_BUILDERS["vllm-inference"] = _vllm_inference
TOPOLOGY_KEYS["vllm-inference"] = _vllm_sections
from .observability import TOPOLOGY_SECTIONS as _obs_sections, build_values as _observability  # noqa: E402
CHART_BUILDERS["observability"] = _observability
TOPOLOGY_KEYS["observability"] = _obs_sections

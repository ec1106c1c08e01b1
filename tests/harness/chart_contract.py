"""The project's contract strings, read from the charts' rendered output.

The node label a GPU pool gives its nodes (which the model-server pods select on), the GPU taint,
the port vLLM listens on and its health path live in the chart templates only; Python defines
none of them (tests/unit/test_contract_strings.py). Tests take them from here: each is read from
what charts/gpu-infra or charts/vllm-inference render for their ci/01 defaults."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from tests.harness import helm
from tests.harness.paths import CHARTS


def nodepool_pool_label(nodepool: dict[str, Any]) -> str:
    """The label key a NodePool gives its nodes with the pool's own name as value."""
    labels = nodepool["spec"]["template"]["metadata"].get("labels") or {}
    keys = [k for k, v in labels.items() if v == nodepool["metadata"]["name"]]
    assert len(keys) == 1, f"NodePool {nodepool['metadata']['name']}: no single pool label in {labels}"
    return keys[0]


def nodepool_gpu_taint(nodepool: dict[str, Any]) -> dict[str, str]:
    """The taint a GPU NodePool puts on its nodes (key and effect)."""
    taints = nodepool["spec"]["template"]["spec"].get("taints") or []
    assert len(taints) == 1, f"NodePool {nodepool['metadata']['name']}: expected one taint, got {taints}"
    return {"key": taints[0]["key"], "effect": taints[0]["effect"]}


def server_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The vLLM container of a rendered single-node vllm-inference release."""
    (deploy,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = [c for c in deploy["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm"]
    return container


@dataclass(frozen=True)
class Contract:
    pool_label: str           # node label key gpu-infra's NodePools set, vllm-inference selects on
    gpu_taint_key: str        # taint of the GPU nodes, tolerated by the model-server pods
    gpu_taint_effect: str
    serving_port: int         # the vLLM container's port
    serving_port_name: str
    health_path: str          # path of the server's probes

    @property
    def gpu_toleration(self) -> dict[str, str]:
        return {"key": self.gpu_taint_key, "operator": "Exists", "effect": self.gpu_taint_effect}


@functools.cache
def rendered(helm_name: str = "helm4") -> Contract:
    """The contract as the charts render it for their ci/01 defaults."""
    infra = helm.render(CHARTS / "gpu-infra", [CHARTS / "gpu-infra/ci/01-default-values.yaml"],
                        helm=helm_name, release="gpu-infra", namespace="gpu-infra")
    server = helm.render(CHARTS / "vllm-inference", [CHARTS / "vllm-inference/ci/01-defaults-values.yaml"],
                         helm=helm_name, release="vllm", namespace="llm")
    (nodepool,) = [o for o in infra if o["kind"] == "NodePool"]
    taint = nodepool_gpu_taint(nodepool)
    container = server_container(server)
    (port,) = container["ports"]
    return Contract(pool_label=nodepool_pool_label(nodepool), gpu_taint_key=taint["key"],
                    gpu_taint_effect=taint["effect"], serving_port=int(port["containerPort"]),
                    serving_port_name=port["name"], health_path=container["readinessProbe"]["httpGet"]["path"])

"""From a scenario's rendered charts to what the cluster needs: node shapes of its pools, the pod
groups of the model server, and how many nodes those pods fill."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from tests.harness import chart_contract
from tests.harness.helm import render
from vllm_eks.check import workloads
from vllm_eks.core.units import quantity_millicores

from .nodes import NodeShape, quantity_bytes, shape_from_plan, shapes_from_nodepools
from .scenarios import Scenario, chart_dir, discover

RELEASES = {"gpu-infra": "infra", "vllm-inference": "vllm", "observability": "obs"}


def render_scenario_chart(scenario: Scenario, chart: str, namespace: str | None = None,
                          set_values: Mapping[str, Any] | None = None, helm: str = "helm4") -> list[dict[str, Any]]:
    d = chart_dir(chart)
    values = scenario.values(chart)
    if not d or not values:
        return []
    return render(d, [values], set_values=set_values, helm=helm, release=RELEASES[chart],
                  namespace=namespace or scenario.namespace)


def scenario_shapes(scenario: Scenario) -> list[NodeShape]:
    """Node shapes of the scenario's pools: from the rendered NodePools when gpu-infra renders
    any, else the one pool plan.json and the charts' pool label describe."""
    plan = scenario.plan or {}
    objs = render_scenario_chart(scenario, "gpu-infra")
    if any(o.get("kind") == "NodePool" for o in objs):
        return shapes_from_nodepools(objs, plan.get("instance"), f"values/{scenario.name}/gpu-infra.yaml")
    server = scenario.values("vllm-inference")
    pool = ((yaml.safe_load(server.read_text()) or {}).get("scheduling") or {}).get("pool") if server else None
    if plan and pool:
        return [shape_from_plan(plan, f"values/{scenario.name}/plan.json", pool)]
    return []


def amount(resource: str, q: str | int) -> int:
    """A quantity in the unit the fit arithmetic uses: millicores for cpu, bytes, or a count."""
    if resource == "cpu":
        return quantity_millicores(q)
    if resource in ("memory", "ephemeral-storage"):
        return quantity_bytes(q)
    return int(q)


def pod_requests(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective requests of a pod spec as the scheduler counts them (vllm_eks.check.workloads:
    containers and sidecar init containers summed, at least each regular init container beside
    the sidecars before it; limits stand in for missing requests), in millicores for cpu, else
    bytes or a count."""
    return {k: int(v * 1000) if k == "cpu" else int(v) for k, v in workloads.pod_requests(dict(pod_spec)).items()}


@dataclass
class PodGroup:
    """Pods of one workload object of the model server."""

    kind: str
    name: str
    pods: int
    spec: dict[str, Any]
    labels: dict[str, str]

    @property
    def controller(self) -> str | None:
        """The operator that would create these pods when it is not part of Kubernetes itself
        (it does not run in this tier: the object is stored and validated, no pods appear)."""
        return {"LeaderWorkerSet": "LeaderWorkerSet controller", "RayService": "KubeRay operator"}.get(self.kind)

    @property
    def pool(self) -> str | None:
        sel = self.spec.get("nodeSelector") or {}
        if chart_contract.rendered().pool_label in sel:
            return sel[chart_contract.rendered().pool_label]
        terms = (((self.spec.get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
        for term in terms:
            for expr in term.get("matchExpressions") or []:
                if expr["key"] == chart_contract.rendered().pool_label and expr["operator"] == "In" and len(expr["values"]) == 1:
                    return expr["values"][0]
        return None

    @property
    def requests(self) -> dict[str, int]:
        return pod_requests(self.spec)


# The model server's workload kinds (the pods of Jobs and of helm test hooks are no server).
SERVER_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet", "RayService")


def pod_groups(objects: Sequence[Mapping[str, Any]]) -> list[PodGroup]:
    """Deployments, StatefulSets, LeaderWorkerSets (leader + workers) and RayServices (head +
    worker groups) among rendered objects: vllm_eks.check.workloads' pod templates."""
    out = []
    for t in workloads.pod_templates([dict(o) for o in objects]):
        if t.kind not in SERVER_KINDS:
            continue
        name = t.name if t.role == "pod" else f"{t.name}/{t.group or t.role}"
        out.append(PodGroup(t.kind, name, t.count, t.spec, t.labels))
    return out


def daemonset_requests(objects: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Requests of the DaemonSets that run on every GPU node (they tolerate the GPU taint)."""
    total: dict[str, int] = {}
    for o in objects:
        if o.get("kind") != "DaemonSet":
            continue
        spec = o["spec"]["template"]["spec"]
        if not any(t.get("key") == chart_contract.rendered().gpu_taint_key for t in spec.get("tolerations") or []):
            continue
        for k, v in pod_requests(spec).items():
            total[k] = total.get(k, 0) + v
        total["pods"] = total.get("pods", 0) + 1
    return total


def pods_per_node(shape: NodeShape, requests: Mapping[str, int], overhead: Mapping[str, int]) -> int:
    """How many pods with these requests one node of the shape holds after the DaemonSets."""
    fits = [int(shape.allocatable.get("pods", "110")) - overhead.get("pods", 0)]
    for res, req in requests.items():
        if req <= 0:
            continue
        if res not in shape.allocatable:
            return 0
        free = amount(res, shape.allocatable[res]) - overhead.get(res, 0)
        fits.append(max(free, 0) // req)
    return max(min(fits), 0)


def nodes_for(group: PodGroup, shape: NodeShape, overhead: Mapping[str, int]) -> int:
    per = pods_per_node(shape, group.requests, overhead)
    if per == 0:
        raise AssertionError(
            f"{group.kind} {group.name} (requests {group.requests}) does not fit one node of {shape.source} "
            f"(allocatable {shape.allocatable}, DaemonSets {dict(overhead)})")
    return math.ceil(group.pods / per)


def shape_for(group: PodGroup, shapes: Sequence[NodeShape]) -> NodeShape:
    pool = group.pool
    for s in shapes:
        if pool is not None and s.labels.get(chart_contract.rendered().pool_label) == pool:
            return s
    sel = group.spec.get("nodeSelector") or {}
    for s in shapes:
        if sel and all(s.labels.get(k) == v for k, v in sel.items()):
            return s
    raise AssertionError(
        f"{group.kind} {group.name} selects pool {pool!r} / nodeSelector {sel}; "
        f"pools available: {[s.labels.get(chart_contract.rendered().pool_label) for s in shapes]}")


def deployment_scenario() -> Scenario | None:
    """The first committed scenario whose model server is a Deployment (pods created by
    Kubernetes' own controllers, so scheduling and rollouts can be watched here)."""
    for s in discover():
        if "vllm-inference" in s.charts() and any(
                g.kind == "Deployment" for g in pod_groups(render_scenario_chart(s, "vllm-inference"))):
            return s
    return None

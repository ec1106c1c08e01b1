"""Simulated GPU nodes shaped like the nodes Karpenter would launch for our pools.

A node's labels, taints and allocatable come from a rendered gpu-infra NodePool (template labels
and taints, requirement values) plus that instance type's row of instances.csv. Before
charts/gpu-infra exists for a scenario, the same shape is derived from plan.json and
vllm_eks.core.contract (the labels and taint the NodePool is required to carry).

Labels Karpenter sets on its nodes (karpenter.sh/nodepool, karpenter.sh/capacity-type,
karpenter.k8s.aws/instance-*, the well-known kubernetes.io ones) follow Karpenter's documented
well-known labels (karpenter.sh/docs/reference/instance-types); the NodeClaim CRD in
$VLLM_EKS_CRD_DIR names the same keys.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from tests.harness import chart_contract
from vllm_eks.catalog.node_allocatable import allocatable
from vllm_eks.core import contract, units
from vllm_eks.core.units import GIB

# Karpenter's defaults for a node's kubelet (karpenter.sh docs, "kubelet" of EC2NodeClass):
# evictionHard nodefs.available 10%, kubeReserved ephemeral-storage 1Gi.
_EVICTION_NODEFS_FRACTION = 0.10
_KUBE_RESERVED_EPHEMERAL = 1 * GIB
DEFAULT_ZONE = "us-east-1a"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
SOURCE_ANNOTATION = "vllm-eks.io/simulated-from"


class NodeShapeError(ValueError):
    """The pool cannot be turned into a node (unknown instance type, impossible requirement)."""


@dataclass(frozen=True)
class InstanceRow:
    name: str
    gpu: str
    gpu_count: int
    gpu_mem_mib: int
    vcpu: int
    mem_mib: int
    efa_max: int
    local_nvme_gb: int
    alloc_cpu: str
    alloc_mem: str
    max_pods: int


@lru_cache(maxsize=1)
def instances() -> dict[str, InstanceRow]:
    """instances.csv as shipped with the generator (every row, GPU or not)."""
    text = resources.files("vllm_eks.catalog").joinpath("data/instances.csv").read_text()
    out: dict[str, InstanceRow] = {}
    for row in csv.DictReader(text.splitlines()):
        # allocatable from the type's shape, as the generator computes it (Karpenter's formula)
        node = allocatable(int(row["vcpu"]), int(row["mem_mib"]), int(row["max_enis"]), int(row["ipv4_per_eni"]))
        out[row["instance"]] = InstanceRow(
            name=row["instance"], gpu=row["gpu"], gpu_count=int(row["gpu_count"] or 0),
            gpu_mem_mib=int(row["gpu_mem_mib_ec2"] or 0), vcpu=int(row["vcpu"]),
            mem_mib=int(row["mem_mib"]), efa_max=int(row["efa_max"] or 0),
            local_nvme_gb=int(row["local_nvme_gb"] or 0), alloc_cpu=f"{node.cpu_millicores}m",
            alloc_mem=f"{node.memory_mib}Mi", max_pods=node.max_pods,
        )
    return out


def instance(name: str) -> InstanceRow:
    rows = instances()
    if name not in rows:
        raise NodeShapeError(f"instance type {name!r} is not in instances.csv (known: {', '.join(sorted(rows))})")
    return rows[name]


@dataclass
class NodeShape:
    """Everything needed to create one simulated node of a pool."""

    pool: str  # NodePool name
    instance: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    allocatable: dict[str, str]
    capacity: dict[str, str]
    source: str  # where the shape came from, for messages and the node annotation
    requirements: list[dict[str, Any]] = field(default_factory=list)

    def with_allocatable(self, changes: dict[str, str]) -> NodeShape:
        """The same node with some allocatable resources changed (e.g. a failed GPU)."""
        alloc = {**self.allocatable, **changes}
        cap = {**self.capacity, **changes}
        return NodeShape(self.pool, self.instance, dict(self.labels), list(self.taints), alloc, cap,
                         self.source + f" with {changes}", list(self.requirements))


def _karpenter_labels(row: InstanceRow, pool: str, zone: str, capacity_type: str, nodeclass: str) -> dict[str, str]:
    family, _, size = row.name.partition(".")
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        contract.INSTANCE_TYPE_LABEL: row.name,
        contract.ZONE_LABEL: zone,
        "topology.kubernetes.io/region": zone[:-1],
        contract.CAPACITY_TYPE_LABEL: capacity_type,
        "karpenter.sh/nodepool": pool,
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-size": size,
        "karpenter.k8s.aws/instance-cpu": str(row.vcpu),
        "karpenter.k8s.aws/instance-memory": str(row.mem_mib),
    }
    if nodeclass:
        labels["karpenter.k8s.aws/ec2nodeclass"] = nodeclass
    if row.gpu_count:
        labels.update({
            contract.GPU_COUNT_LABEL: str(row.gpu_count),
            contract.GPU_NAME_LABEL: row.gpu.lower(),
            "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            "karpenter.k8s.aws/instance-gpu-memory": str(row.gpu_mem_mib),
        })
    return labels


def _resources(row: InstanceRow, ephemeral_capacity: int) -> tuple[dict[str, str], dict[str, str]]:
    eph_alloc = int(ephemeral_capacity * (1 - _EVICTION_NODEFS_FRACTION)) - _KUBE_RESERVED_EPHEMERAL
    alloc = {
        "cpu": row.alloc_cpu,
        "memory": row.alloc_mem,
        "pods": str(row.max_pods),
        "ephemeral-storage": str(max(eph_alloc, 0)),
    }
    cap = {
        "cpu": str(row.vcpu),
        "memory": f"{row.mem_mib}Mi",
        "pods": str(row.max_pods),
        "ephemeral-storage": str(ephemeral_capacity),
    }
    for res, count in ((contract.GPU_RESOURCE, row.gpu_count), (contract.EFA_RESOURCE, row.efa_max)):
        if count:
            alloc[res] = cap[res] = str(count)
    return alloc, cap


def quantity_bytes(q: str | int) -> int:
    try:
        return units.quantity_bytes(q)
    except ValueError as exc:
        raise NodeShapeError(f"cannot read quantity {q!r}") from exc


def _ephemeral_from_nodeclass(nodeclass: dict[str, Any] | None, row: InstanceRow) -> tuple[int, str]:
    """Node ephemeral storage as Karpenter computes it: the instance-store RAID0 array when the
    EC2NodeClass asks for it, else the root volume of the block device mappings."""
    if not nodeclass:
        raise NodeShapeError("no EC2NodeClass")
    spec = nodeclass.get("spec", {})
    if spec.get("instanceStorePolicy") == "RAID0" and row.local_nvme_gb:
        return row.local_nvme_gb * 10**9, f"RAID0 instance store {row.local_nvme_gb} GB"
    for bdm in spec.get("blockDeviceMappings") or []:
        if bdm.get("rootVolume") and (bdm.get("ebs") or {}).get("volumeSize"):
            size = bdm["ebs"]["volumeSize"]
            return quantity_bytes(size), f"root volume {size}"
    raise NodeShapeError(
        f"EC2NodeClass {nodeclass['metadata']['name']} has no instance-store RAID0 (or {row.name} has no NVMe) "
        "and no blockDeviceMappings entry with rootVolume: true and ebs.volumeSize")


def _pick(req: dict[str, Any], prefer: list[str]) -> str:
    values = [str(v) for v in req.get("values") or []]
    for p in prefer:
        if p in values:
            return p
    if not values:
        raise NodeShapeError(f"requirement {req} has no values to pick from")
    return values[0]


def satisfies(labels: dict[str, str], req: dict[str, Any]) -> bool:
    """Does a node with these labels satisfy one NodeSelectorRequirement (Karpenter semantics)?"""
    key, op, values = req["key"], req["operator"], [str(v) for v in req.get("values") or []]
    val = labels.get(key)
    if op == "In":
        return val in values
    if op == "NotIn":
        return val not in values
    if op == "Exists":
        return val is not None
    if op == "DoesNotExist":
        return val is None
    if op in ("Gt", "Lt"):
        if val is None:
            return False
        return int(val) > int(values[0]) if op == "Gt" else int(val) < int(values[0])
    raise NodeShapeError(f"unknown requirement operator {op!r} in {req}")


def shapes_from_nodepools(objects: list[dict[str, Any]], plan_instance: str | None, source: str) -> list[NodeShape]:
    """One NodeShape per NodePool among rendered gpu-infra objects."""
    nodeclasses = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "EC2NodeClass"}
    shapes = []
    for pool in (o for o in objects if o.get("kind") == "NodePool"):
        name = pool["metadata"]["name"]
        tmpl = pool["spec"]["template"]
        reqs = tmpl["spec"].get("requirements") or []
        by_key = {r["key"]: r for r in reqs}
        it_req = by_key.get(contract.INSTANCE_TYPE_LABEL)
        if it_req and it_req["operator"] == "In":
            inst = _pick(it_req, [plan_instance] if plan_instance else [])
        elif plan_instance:
            inst = plan_instance
        else:
            raise NodeShapeError(f"NodePool {name}: no {contract.INSTANCE_TYPE_LABEL} In requirement and no plan instance")
        row = instance(inst)
        zone_req = by_key.get(contract.ZONE_LABEL)
        zone = _pick(zone_req, []) if zone_req and zone_req["operator"] == "In" else DEFAULT_ZONE
        ct_req = by_key.get(contract.CAPACITY_TYPE_LABEL)
        capacity_type = _pick(ct_req, ["on-demand"]) if ct_req and ct_req["operator"] == "In" else "on-demand"
        ref = tmpl["spec"].get("nodeClassRef") or {}
        nodeclass = nodeclasses.get(ref.get("name", ""))
        eph, eph_src = _ephemeral_from_nodeclass(nodeclass, row)
        labels = _karpenter_labels(row, name, zone, capacity_type, ref.get("name", ""))
        labels.update({k: str(v) for k, v in (tmpl.get("metadata") or {}).get("labels", {}).items()})
        # Any other In requirement (e.g. a custom label) becomes a node label, as Karpenter does.
        for req in reqs:
            if req["operator"] == "In" and req["key"] not in labels:
                labels[req["key"]] = _pick(req, [])
        unmet = [r for r in reqs if not satisfies(labels, r)]
        if unmet:
            raise NodeShapeError(f"NodePool {name}: a {inst} node would not satisfy requirements {unmet}")
        kubelet = (nodeclass or {}).get("spec", {}).get("kubelet") or {}
        alloc, cap = _resources(row, eph)
        if kubelet.get("maxPods"):
            alloc["pods"] = cap["pods"] = str(kubelet["maxPods"])
        taints = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in tmpl["spec"].get("taints") or []]
        shapes.append(NodeShape(name, inst, labels, taints, alloc, cap,
                                f"NodePool {name} ({source}); ephemeral storage: {eph_src}", reqs))
    return shapes


def shape_from_plan(plan: dict[str, Any], source: str, pool: str) -> NodeShape:
    """The node the gpu-infra NodePool for plan['instance'] must produce (the labels and taint the
    charts render); `pool` is the pool the model server selects (its values' scheduling.pool)."""
    row = instance(plan["instance"])
    labels = _karpenter_labels(row, pool, DEFAULT_ZONE, "on-demand", pool)
    labels[chart_contract.rendered().pool_label] = pool
    # Without an EC2NodeClass: the disk the plan asks for, plus what kubelet holds back.
    need = int(plan.get("ephemeral_storage_bytes") or 0)
    eph = max(row.local_nvme_gb * 10**9,
              math.ceil((need + _KUBE_RESERVED_EPHEMERAL) / (1 - _EVICTION_NODEFS_FRACTION)) + 20 * GIB)
    alloc, cap = _resources(row, eph)
    taints = [{"key": chart_contract.rendered().gpu_taint_key, "value": "true", "effect": chart_contract.rendered().gpu_taint_effect}]
    return NodeShape(pool, row.name, labels, taints, alloc, cap, f"plan.json ({source}) + the charts' pool label and GPU taint")


def node_manifest(shape: NodeShape, name: str) -> dict[str, Any]:
    labels = dict(shape.labels)
    labels["kubernetes.io/hostname"] = name
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                KWOK_ANNOTATION: "fake",
                "node.alpha.kubernetes.io/ttl": "0",
                SOURCE_ANNOTATION: shape.source[:1000],
            },
        },
        "spec": {"taints": shape.taints} if shape.taints else {},
        # Nodes may carry status on create; kwok keeps allocatable/capacity it finds.
        "status": {"allocatable": shape.allocatable, "capacity": shape.capacity},
    }


def node_name(pool: str, index: int) -> str:
    suffix = os.urandom(2).hex()
    return f"{pool}-{index}-{suffix}"[:63]

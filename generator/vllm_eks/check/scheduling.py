"""Scheduling fit: do the model-server pods of a scenario fit the GPU pools of the same scenario?

Renders charts/gpu-infra and charts/vllm-inference (or takes objects already rendered), then
for every model-server pod template (Deployment, StatefulSet, LeaderWorkerSet leader/worker,
RayCluster/RayService head and worker groups, bare Pods) looks for a Karpenter NodePool that

- defines the node labels the pod's nodeSelector and required node affinity ask for (template
  labels, requirements, and the labels Karpenter derives from the instance type), matched the
  way the scheduler matches them, with no label key special to this check,
- carries only taints the pod tolerates,
- offers an instance type whose allocatable (instances.csv) minus the DaemonSets the gpu-infra
  chart puts on it, or the Plan's DaemonSet reserve when larger, covers the pod's CPU,
  memory, ephemeral-storage, nvidia.com/gpu and vpc.amazonaws.com/efa requests, and whose GPUs
  and EFA interfaces are advertised by a device plugin that actually runs there,
- and whose `limits` admit all the nodes the replicas (plus a rolling-update surge) need.

Karpenter counts a node's whole capacity against a NodePool's limits, so the limit check
multiplies nodes by per-node capacity, not pods by requests.

Every failure becomes a Mismatch naming the workload, the pool and the exact quantity."""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from vllm_eks.catalog.instances import Hardware, instance_catalog
from vllm_eks.check.charts_source import charts_dir as resolve_charts_dir
from vllm_eks.check.workloads import PodTemplate, pod_requests, pod_templates
from vllm_eks.core import contract
from vllm_eks.core.errors import VllmEksError
from vllm_eks.core.units import GIB, MIB, parse_quantity
from vllm_eks.planning.pod_resources import DEFAULT_DAEMONSET_RESERVE_CPU_M, DEFAULT_DAEMONSET_RESERVE_MEMORY
from vllm_eks.planning.pools import EPHEMERAL_EVICTION_FRACTION, EPHEMERAL_KUBE_RESERVED_BYTES


@dataclass(frozen=True)
class Reserve:
    """What every GPU node keeps for its DaemonSets (the Plan's daemonset_reserve_*): the gpu-infra
    DaemonSets and the cluster's own (VPC CNI, kube-proxy, CSI, log and metrics agents). A node
    loses the larger of this and what the rendered gpu-infra DaemonSets request."""
    cpu_millicores: int = DEFAULT_DAEMONSET_RESERVE_CPU_M
    memory_bytes: int = DEFAULT_DAEMONSET_RESERVE_MEMORY

    @classmethod
    def of_plan(cls, summary: dict[str, Any]) -> Reserve:
        """From a scenario's plan.json; the defaults for one written before the Plan had it."""
        return cls(int(summary.get("daemonset_reserve_cpu_millicores", DEFAULT_DAEMONSET_RESERVE_CPU_M)),
                   int(summary.get("daemonset_reserve_memory_bytes", DEFAULT_DAEMONSET_RESERVE_MEMORY)))

    def of(self, resource: str) -> Decimal:
        if resource == CPU:
            return Decimal(self.cpu_millicores) / 1000
        return Decimal(self.memory_bytes) if resource == MEMORY else Decimal(0)


# Every instance in the catalog is x86_64 Linux with NVIDIA GPUs.
ARCH = "amd64"

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL = "ephemeral-storage"
RESOURCES = (CPU, MEMORY, EPHEMERAL, contract.GPU_RESOURCE, contract.EFA_RESOURCE)


class FitError(VllmEksError):
    """The scenario could not be rendered or read."""


@dataclass(frozen=True)
class Mismatch:
    workload: str            # Kind/name of the object holding the pod template
    template: str            # "pod", "leader", "worker", "head", "worker group <name>"
    pool: str | None         # NodePool examined (None: no pool could be examined)
    reason: str              # short category: pool-label, label, zone, toleration, gpu, efa, ...
    message: str

    def __str__(self) -> str:
        where = f" on pool {self.pool}" if self.pool else ""
        return f"{self.workload} ({self.template}){where}: [{self.reason}] {self.message}"


def format_mismatches(mismatches: Sequence[Mismatch]) -> str:
    """One line per mismatch; the first line says how many."""
    if not mismatches:
        return "every model-server pod fits a GPU pool"
    lines = [f"{len(mismatches)} scheduling mismatch{'es' if len(mismatches) != 1 else ''}:"]
    lines += [f"  - {m}" for m in mismatches]
    return "\n".join(lines)


# --- quantities -----------------------------------------------------------------------------

def _fmt(resource: str, amount: Decimal) -> str:
    if resource == CPU:
        return f"{int(amount * 1000)}m"
    if resource in (MEMORY, EPHEMERAL):
        return f"{float(amount) / GIB:.1f} GiB"
    return str(int(amount))


def _selected_keys(spec: dict[str, Any]) -> set[str]:
    """Node label keys the pod's nodeSelector and required node affinity name."""
    keys = set(spec.get("nodeSelector") or {})
    for term in _required_terms(spec):
        keys |= {str(e.get("key")) for e in term.get("matchExpressions") or []}
    return keys


def is_model_server(t: PodTemplate, pools: Sequence[Pool] = ()) -> bool:
    """A pod that requests GPUs or EFA interfaces, or selects a label that only the GPU pools'
    NodePools give their nodes."""
    req = t.requests()
    return (req.get(contract.GPU_RESOURCE, 0) > 0 or req.get(contract.EFA_RESOURCE, 0) > 0
            or bool(_selected_keys(t.spec) & pool_label_keys(pools)))


# --- pools ------------------------------------------------------------------------------------

ANY = None  # label domain: Karpenter may pick any value


@dataclass
class Pool:
    name: str
    nodepool: dict[str, Any]
    nodeclass: dict[str, Any] | None

    @property
    def template(self) -> dict[str, Any]:
        return (self.nodepool.get("spec") or {}).get("template") or {}

    @property
    def labels(self) -> dict[str, str]:
        return {k: str(v) for k, v in ((self.template.get("metadata") or {}).get("labels") or {}).items()}

    @property
    def requirements(self) -> list[dict[str, Any]]:
        return (self.template.get("spec") or {}).get("requirements") or []

    @property
    def taints(self) -> list[dict[str, Any]]:
        return (self.template.get("spec") or {}).get("taints") or []

    @property
    def limits(self) -> dict[str, Decimal]:
        raw = (self.nodepool.get("spec") or {}).get("limits") or {}
        return {k: parse_quantity(v) for k, v in raw.items()}

    def instance_types(self, catalog: dict[str, Hardware]) -> list[str]:
        for r in self.requirements:
            if r.get("key") == contract.INSTANCE_TYPE_LABEL and r.get("operator") == "In":
                return list(r.get("values") or [])
        excluded = {v for r in self.requirements if r.get("key") == contract.INSTANCE_TYPE_LABEL
                    and r.get("operator") == "NotIn" for v in r.get("values") or []}
        return [t for t in catalog if t not in excluded]

    @property
    def ami_family(self) -> str:
        spec = (self.nodeclass or {}).get("spec") or {}
        for term in spec.get("amiSelectorTerms") or []:
            if "alias" in term:
                return str(term["alias"]).split("@")[0].lower()
        return str(spec.get("amiFamily", "")).lower()


def pool_label_keys(pools: Iterable[Pool]) -> set[str]:
    """Label keys the NodePools put on their nodes themselves (their template labels)."""
    return {key for pool in pools for key in pool.labels}


def label_domain(pool: Pool, hw: Hardware) -> dict[str, set[str] | None]:
    """Values each node label can take on a node of `pool` of type `hw` (None = any value).
    A key that is absent here is a label Karpenter will not put on the node."""
    domain: dict[str, set[str] | None] = {
        "karpenter.sh/nodepool": {pool.name},
        contract.INSTANCE_TYPE_LABEL: {hw.name},
        contract.GPU_COUNT_LABEL: {str(hw.gpus_per_node)},
        contract.GPU_NAME_LABEL: {hw.gpu},
        "karpenter.k8s.aws/instance-gpu-manufacturer": {"nvidia"},
        "kubernetes.io/arch": {ARCH},
        "kubernetes.io/os": {"linux"},
    }
    for key, value in pool.labels.items():
        domain[key] = {value}
    for r in pool.requirements:
        key, op, values = str(r.get("key", "")), r.get("operator"), {str(v) for v in r.get("values") or []}
        if op == "In":
            current = domain.get(key, ANY)
            domain[key] = values if current is ANY else current & values
        elif op == "NotIn":
            if domain.get(key) is not None:
                domain[key] = domain[key] - values  # type: ignore[operator]
        elif op == "Exists":
            domain.setdefault(key, ANY)
        elif op == "DoesNotExist":
            domain.pop(key, None)
    # Labels Karpenter always sets: any zone of the cluster unless restricted; on-demand unless
    # the NodePool names capacity types.
    domain.setdefault(contract.ZONE_LABEL, ANY)
    domain.setdefault(contract.CAPACITY_TYPE_LABEL, {"on-demand"})
    return domain


def _required_terms(spec: dict[str, Any]) -> list[dict[str, Any]]:
    na = ((spec.get("affinity") or {}).get("nodeAffinity") or {})
    return ((na.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])


def _label_reason(key: str, pool_keys: Iterable[str]) -> str:
    if key in pool_keys:
        return "pool-label"
    if key == contract.ZONE_LABEL:
        return "zone"
    return "label"


def _expr_problem(expr: dict[str, Any], domain: dict[str, set[str] | None]) -> str | None:
    key, op, values = str(expr.get("key", "")), expr.get("operator"), [str(v) for v in expr.get("values") or []]
    present = key in domain
    allowed = domain.get(key)
    if op == "In":
        if not present:
            return f"requires {key} in {values}, a label this NodePool does not define"
        if allowed is not ANY and not (allowed & set(values)):
            return f"requires {key} in {values}, the NodePool offers {sorted(allowed)}"
    elif op == "NotIn":
        if present and allowed is not ANY and allowed <= set(values):
            return f"requires {key} not in {values}, the NodePool offers only {sorted(allowed)}"
    elif op == "Exists":
        if not present:
            return f"requires label {key} to exist, the NodePool does not define it"
    elif op == "DoesNotExist":
        if present:
            return f"requires label {key} to be absent, the NodePool sets it"
    elif op in ("Gt", "Lt"):
        if not present:
            return f"requires {key} {op} {values}, a label this NodePool does not define"
        if allowed is not ANY:
            bound = int(values[0])
            ok = [v for v in allowed if v.lstrip("-").isdigit() and (int(v) > bound if op == "Gt" else int(v) < bound)]
            if not ok:
                return f"requires {key} {op} {bound}, the NodePool offers {sorted(allowed)}"
    return None


def selection_problems(spec: dict[str, Any], domain: dict[str, set[str] | None],
                       pool_keys: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(reason, message) for each nodeSelector entry / required affinity the node cannot meet, as
    the scheduler matches them: every entry and every expression of one term satisfied by the node's
    labels (`domain`). `pool_keys`: labels the NodePool sets itself, reported as pool-label."""
    pool_keys = set(pool_keys)
    problems: list[tuple[str, str]] = []
    for key, value in (spec.get("nodeSelector") or {}).items():
        p = _expr_problem({"key": key, "operator": "In", "values": [str(value)]}, domain)
        if p:
            reason = p.replace(f"requires {key} in ['{value}']", f"selects {key}={value}")
            problems.append((_label_reason(key, pool_keys), reason))
    terms = _required_terms(spec)
    if terms:
        term_problems: list[list[tuple[str, str]]] = []
        for term in terms:
            ps = [(_label_reason(e.get("key", ""), pool_keys), p) for e in term.get("matchExpressions") or []
                  if (p := _expr_problem(e, domain))]
            if not ps:
                term_problems = []
                break
            term_problems.append(ps)
        if term_problems:
            # No term matches: report the problems of the first term (usually the only one).
            problems += [(r, f"node affinity {m}") for r, m in term_problems[0]]
    return problems


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and str(t.get("value", "")) == str(taint.get("value", "")):
            return True
    return False


def untolerated_taints(spec: dict[str, Any], pool: Pool) -> list[dict[str, Any]]:
    tolerations = spec.get("tolerations") or []
    return [t for t in pool.taints if t.get("effect") in ("NoSchedule", "NoExecute")
            and not _tolerates(tolerations, t)]


# --- node capacity ------------------------------------------------------------------------------

def _daemonset_role(ds: dict[str, Any]) -> str:
    labels = (ds.get("metadata") or {}).get("labels") or {}
    component = labels.get("app.kubernetes.io/component", "")
    images = " ".join(c.get("image", "") for c in
                      ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or [])
    # the component label decides; images are a fallback, EFA first because the EFA plugin's
    # image name (aws-efa-k8s-device-plugin) also contains "k8s-device-plugin"
    if component in ("nvidia-device-plugin", "efa-device-plugin"):
        return component.split("-")[0]
    if "efa-k8s-device-plugin" in images:
        return "efa"
    if "k8s-device-plugin" in images:
        return "nvidia"
    return "other"


def daemonsets_on(pool: Pool, hw: Hardware, daemonsets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The DaemonSets whose pods land on a node of `pool` of type `hw`."""
    domain = label_domain(pool, hw)
    out = []
    for ds in daemonsets:
        spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        if not selection_problems(spec, domain) and not untolerated_taints(spec, pool):
            out.append(ds)
    return out


def ephemeral_capacity(pool: Pool, hw: Hardware) -> Decimal | None:
    """Bytes Karpenter reports as ephemeral-storage capacity: the instance store when RAID0 is
    set and the instance has NVMe, else the volume marked rootVolume. None when unknown."""
    spec = (pool.nodeclass or {}).get("spec") or {}
    if spec.get("instanceStorePolicy") == "RAID0" and hw.local_nvme_gb > 0:
        return Decimal(hw.local_nvme_gb) * Decimal(10**9)
    for bdm in spec.get("blockDeviceMappings") or []:
        if bdm.get("rootVolume") and (bdm.get("ebs") or {}).get("volumeSize"):
            return parse_quantity(bdm["ebs"]["volumeSize"])
    return None


@dataclass
class NodeShape:
    """What a pod can have on one node of a pool: allocatable minus DaemonSets minus reserve."""
    hw: Hardware
    available: dict[str, Decimal]
    allocatable: dict[str, Decimal]
    daemonset_use: dict[str, Decimal]
    device_notes: dict[str, str] = field(default_factory=dict)
    reserve: Reserve = field(default_factory=Reserve)


def node_shape(pool: Pool, hw: Hardware, daemonsets: list[dict[str, Any]], reserve: Reserve = Reserve()) -> NodeShape:
    landing = daemonsets_on(pool, hw, daemonsets)
    roles = {_daemonset_role(ds) for ds in landing}
    notes: dict[str, str] = {}
    if pool.ami_family == "bottlerocket":
        gpus = hw.gpus_per_node  # the Bottlerocket NVIDIA AMI runs its own device plugin
    elif "nvidia" in roles:
        gpus = hw.gpus_per_node
    else:
        gpus = 0
        notes[contract.GPU_RESOURCE] = (f"no NVIDIA device plugin runs on this pool ({pool.ami_family or 'unknown'} "
                                        "AMI), so its nodes advertise no nvidia.com/gpu")
    if hw.efa_max == 0:
        efa = 0
        notes[contract.EFA_RESOURCE] = f"{hw.name} has no EFA interface"
    elif "efa" in roles:
        efa = hw.efa_max
    else:
        efa = 0
        notes[contract.EFA_RESOURCE] = ("no EFA device plugin runs on this pool, so its nodes advertise no "
                                        "vpc.amazonaws.com/efa")
    eph = ephemeral_capacity(pool, hw)
    allocatable: dict[str, Decimal] = {
        CPU: Decimal(hw.alloc_cpu_millicores) / 1000,
        MEMORY: Decimal(hw.alloc_memory_bytes),
        contract.GPU_RESOURCE: Decimal(gpus),
        contract.EFA_RESOURCE: Decimal(efa),
    }
    if eph is not None:
        allocatable[EPHEMERAL] = eph * (1 - EPHEMERAL_EVICTION_FRACTION) - EPHEMERAL_KUBE_RESERVED_BYTES
    ds_use: dict[str, Decimal] = defaultdict(Decimal)
    for ds in landing:
        for k, v in pod_requests(((ds.get("spec") or {}).get("template") or {}).get("spec") or {}).items():
            ds_use[k] += v
    available = {k: v - max(ds_use.get(k, Decimal(0)), reserve.of(k)) for k, v in allocatable.items()}
    return NodeShape(hw, available, allocatable, dict(ds_use), notes, reserve)


def resource_problems(req: dict[str, Decimal], shape: NodeShape) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    hw = shape.hw
    for resource in RESOURCES:
        want = req.get(resource, Decimal(0))
        if want <= 0:
            continue
        if resource not in shape.available:
            continue  # ephemeral capacity unknown (no EC2NodeClass): nothing to compare with
        have = shape.available[resource]
        if want <= have:
            continue
        if resource == contract.GPU_RESOURCE:
            if hw.gpus_per_node < want:
                problems.append(("gpu", f"pod requests {int(want)} nvidia.com/gpu, {hw.name} has {hw.gpus_per_node}"))
            else:
                problems.append(("device-plugin", shape.device_notes.get(resource, "no nvidia.com/gpu on the node")))
        elif resource == contract.EFA_RESOURCE:
            if hw.efa_max == 0:
                problems.append(("efa", f"pod requests {int(want)} vpc.amazonaws.com/efa, "
                                        f"{hw.name} has no EFA interface"))
            elif hw.efa_max < want:
                problems.append(("efa", f"pod requests {int(want)} vpc.amazonaws.com/efa, {hw.name} has {hw.efa_max}"))
            else:
                note = shape.device_notes.get(resource, "no vpc.amazonaws.com/efa on the node")
                problems.append(("device-plugin", note))
        else:
            used = shape.daemonset_use.get(resource, Decimal(0))
            reserve = shape.reserve.of(resource)
            problems.append((resource, (
                f"{resource} request {_fmt(resource, want)} exceeds the {_fmt(resource, have)} available on {hw.name} "
                f"(allocatable {_fmt(resource, shape.allocatable[resource])} - the larger of the Plan's DaemonSet "
                f"reserve {_fmt(resource, reserve)} and the gpu-infra DaemonSets {_fmt(resource, used)})")))
    return problems


def pods_per_node(req: dict[str, Decimal], shape: NodeShape) -> int:
    counts = [int(shape.available[r] // v) for r, v in req.items() if v > 0 and r in shape.available]
    return max(1, min(counts + [shape.hw.max_pods])) if counts else shape.hw.max_pods


def _node_capacity(hw: Hardware, resource: str) -> Decimal | None:
    """What one node adds to a NodePool's usage, in the units of `limits`."""
    return {
        CPU: Decimal(hw.vcpu), MEMORY: Decimal(hw.memory_mib) * MIB,
        contract.GPU_RESOURCE: Decimal(hw.gpus_per_node), "nodes": Decimal(1),
    }.get(resource)


# --- the check ----------------------------------------------------------------------------------

def _kind(objects: Iterable[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == kind]


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def build_pools(infra_objects: list[dict[str, Any]]) -> list[Pool]:
    classes = {_name(o): o for o in _kind(infra_objects, "EC2NodeClass")}
    pools = []
    for np in _kind(infra_objects, "NodePool"):
        ref = (((np.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        pools.append(Pool(_name(np), np, classes.get(ref.get("name", ""))))
    return pools


@dataclass
class _Candidate:
    pool: Pool
    problems: list[tuple[str, str]]
    shape: NodeShape | None = None


def _evaluate(t: PodTemplate, pool: Pool, catalog: dict[str, Hardware],
              daemonsets: list[dict[str, Any]], reserve: Reserve) -> _Candidate:
    req = t.requests()
    if pool.nodeclass is None:
        return _Candidate(pool, [("node-class", "the EC2NodeClass its nodeClassRef names is not rendered")])
    taint_problems = [("toleration", f"pod does not tolerate the taint {x.get('key')}"
                       f"{'=' + str(x['value']) if x.get('value') else ''}:{x.get('effect')}")
                      for x in untolerated_taints(t.spec, pool)]
    best: _Candidate | None = None
    types = pool.instance_types(catalog)
    for name in types:
        hw = catalog.get(name)
        if hw is None:
            cand = _Candidate(pool, [("instance", f"instance type {name} is not in the instance catalog, and the "
                                                  "plan.json has no node figures for it (plan it with --vcpus and "
                                                  "--memory-gib, or read it from EC2 with --instance)")])
        else:
            shape = node_shape(pool, hw, daemonsets, reserve)
            problems = (selection_problems(t.spec, label_domain(pool, hw), pool.labels)
                        + taint_problems + resource_problems(req, shape))
            cand = _Candidate(pool, problems, shape)
        if best is None or len(cand.problems) < len(best.problems):
            best = cand
        if not cand.problems:
            break
    return best or _Candidate(pool, [("instance", "the NodePool allows no instance type")])


def _duplicate_plugin_mismatches(pools: list[Pool], daemonsets: list[dict[str, Any]],
                                 catalog: dict[str, Hardware]) -> list[Mismatch]:
    out = []
    for pool in pools:
        if pool.ami_family != "bottlerocket":
            continue
        for name in pool.instance_types(catalog):
            hw = catalog.get(name)
            if hw is None:
                continue
            for ds in daemonsets_on(pool, hw, daemonsets):
                if _daemonset_role(ds) == "nvidia":
                    out.append(Mismatch(
                        f"DaemonSet/{_name(ds)}", "pod", pool.name, "duplicate-nvidia-plugin",
                        "the pool runs Bottlerocket, whose NVIDIA AMI has the device plugin built in; this DaemonSet "
                        "adds a second NVIDIA device plugin on the same kubelet socket "
                        "(set nvidiaDevicePlugin.enabled=false)"))
            break
    return out


def check_objects(infra_objects: list[dict[str, Any]], server_objects: list[dict[str, Any]],
                  catalog: dict[str, Hardware] | None = None, reserve: Reserve = Reserve()) -> list[Mismatch]:
    """The fit check on rendered objects of charts/gpu-infra and charts/vllm-inference, keeping
    `reserve` (the Plan's DaemonSet reserve) on every node."""
    catalog = catalog if catalog is not None else instance_catalog()
    pools = build_pools(infra_objects)
    daemonsets = _kind(infra_objects, "DaemonSet")
    mismatches = _duplicate_plugin_mismatches(pools, daemonsets, catalog)
    templates = [t for t in pod_templates(server_objects) if is_model_server(t, pools)]
    if not templates:
        return mismatches + [Mismatch("vllm-inference", "-", None, "no-pods",
                                      "the rendered model server has no pod template requesting GPUs")]
    if not pools:
        return mismatches + [Mismatch(t.workload, t.role, None, "no-pool", "gpu-infra renders no NodePool")
                             for t in templates]
    placed: dict[str, list[tuple[PodTemplate, NodeShape]]] = defaultdict(list)
    for t in templates:
        candidates = [_evaluate(t, pool, catalog, daemonsets, reserve) for pool in pools]
        fitting = [c for c in candidates if not c.problems]
        if fitting and (unpinned := _unpinned(t, pools)) is not None:
            mismatches.append(unpinned)
            continue
        if fitting:
            best = max(fitting, key=lambda c: int((c.pool.nodepool.get("spec") or {}).get("weight") or 0))
            assert best.shape is not None
            placed[best.pool.name].append((t, best.shape))
            continue
        unoffered = _unoffered_pool_labels(t, pools)
        if unoffered:
            mismatches += unoffered
            continue
        # Report the pool the pod is meant for (the NodePool labels it selects), else the closest one.
        wanted = _pool_selection(t.spec, pools)
        meant = [c for c in candidates
                 if wanted and all(c.pool.labels.get(k) == v for k, v in wanted.items())]
        closest = meant[0] if meant else min(candidates, key=lambda c: len(c.problems))
        mismatches += [Mismatch(t.workload, t.role, closest.pool.name, r, m) for r, m in closest.problems]
    mismatches += _limit_mismatches(pools, placed)
    return mismatches


def _pool_selection(spec: dict[str, Any], pools: Sequence[Pool]) -> dict[str, str]:
    """The pod's nodeSelector entries on labels the NodePools give their nodes themselves."""
    keys = pool_label_keys(pools)
    return {k: str(v) for k, v in (spec.get("nodeSelector") or {}).items() if k in keys}


def _unpinned(t: PodTemplate, pools: Sequence[Pool]) -> Mismatch | None:
    """A model server that fits, but selects none of the labels the folder's NodePools give their
    nodes (an empty scheduling.pool), may be scheduled on any node that admits it and launched from any
    NodePool of the cluster, so fitting one of these pools says nothing about where it runs."""
    keys = pool_label_keys(pools)
    if not keys or _selected_keys(t.spec) & keys:
        return None
    offered = sorted({f"{k}={v}" for p in pools for k, v in p.labels.items()})
    return Mismatch(t.workload, t.role, None, "no-pool-selected",
                    f"selects none of the NodePools' labels ({', '.join(offered)}), so it may run on any node "
                    "and any NodePool of the cluster that admits it: set scheduling.pool to the pool it is "
                    "sized for")


def _unoffered_pool_labels(t: PodTemplate, pools: Sequence[Pool]) -> list[Mismatch]:
    """A pool-label mismatch for each such entry whose value no NodePool gives its nodes."""
    out = []
    for key, wanted in _pool_selection(t.spec, pools).items():
        offered = sorted({p.labels[key] for p in pools if key in p.labels})
        if wanted not in offered:
            out.append(Mismatch(t.workload, t.role, None, "pool-label",
                                f"selects {key}={wanted}, but the NodePools label their nodes "
                                f"{key}={', '.join(offered)}"))
    return out


def _limit_mismatches(pools: list[Pool], placed: dict[str, list[tuple[PodTemplate, NodeShape]]]) -> list[Mismatch]:
    out = []
    by_name = {p.name: p for p in pools}
    for pool_name, items in placed.items():
        limits = by_name[pool_name].limits
        if not limits:
            continue
        steady_nodes = surge_nodes = 0
        hw = items[0][1].hw
        for t, shape in items:
            per_node = pods_per_node(t.requests(), shape)
            steady_nodes += math.ceil(t.count / per_node)
            surge_nodes += math.ceil((t.count + t.surge) / per_node)
        what = ", ".join(f"{t.workload} {t.role} x{t.count}" + (f" (+{t.surge} surge)" if t.surge else "")
                         for t, _ in items)
        for resource, limit in limits.items():
            per = _node_capacity(hw, resource)
            if per is None:
                continue
            steady, peak = steady_nodes * per, surge_nodes * per
            label = "GPUs" if resource == contract.GPU_RESOURCE else resource
            if steady > limit:
                out.append(Mismatch(items[0][0].workload, items[0][0].role, pool_name, "limit",
                                    f"NodePool limits {resource} to {_fmt(resource, limit)}, but {what} need "
                                    f"{steady_nodes} {hw.name} node(s) = {_fmt(resource, steady)} {label}"))
            elif peak > limit:
                out.append(Mismatch(items[0][0].workload, items[0][0].role, pool_name, "limit",
                                    f"NodePool limits {resource} to {_fmt(resource, limit)}: enough for {what} "
                                    f"({steady_nodes} node(s)), but a rolling update needs {surge_nodes} "
                                    f"{hw.name} node(s) = {_fmt(resource, peak)} {label}"))
    return out


# --- rendering a scenario folder ----------------------------------------------------------------

def helm_binary(helm: str | None) -> str:
    candidate = helm or os.environ.get("VLLM_EKS_HELM") or "helm"
    found = shutil.which(candidate)
    if not found:
        raise FitError(f"helm binary {candidate!r} not found (set VLLM_EKS_HELM or put helm on PATH; "
                       "`make setup` installs one)")
    return found


def helm_failure_line(output: str) -> str:
    """The line of helm's (multi-line) error output that says what failed: the first one that
    starts with "Error:", else the first non-blank one, shortened to one readable line."""
    lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
    chosen = next((line for line in lines if line.startswith("Error:")), lines[0] if lines else "no output")
    return chosen if len(chosen) <= 300 else chosen[:300] + "..."


def render_chart(chart: Path, values: Path, release: str, namespace: str,
                 helm: str | None = None, whole_error: bool = False) -> list[dict[str, Any]]:
    """The objects `helm template` renders; every way helm (or what --helm names) can fail is a
    FitError of one line naming the chart, the values file and what went wrong (with
    whole_error, all of helm's error output joined into that line)."""
    if not values.is_file():
        raise FitError(f"{values}: missing (a scenario folder written by `vllm-eks values` has one file per chart)")
    binary = helm_binary(helm)
    cmd = [binary, "template", release, str(chart), "--namespace", namespace, "--values", str(values)]
    what = f"helm template {chart.name} -f {values}"
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        raise FitError(f"{what}: {binary} did not finish within 300 s") from None
    except OSError as e:
        raise FitError(f"{what}: cannot run {binary} ({e.strerror or e}); give a helm binary with --helm") from None
    stdout, stderr = (proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))
    if proc.returncode != 0 and whole_error:
        joined = " ".join(" ".join(x.split()) for x in (stderr or stdout).splitlines() if x.strip())
        raise FitError(f"{what} failed (exit {proc.returncode}): {joined}")
    if proc.returncode != 0:
        more = len([x for x in (stderr or stdout).splitlines() if x.strip()]) - 1
        extra = f" ({more} more line(s): run `{shlex.join(cmd)}` for helm's whole message)" if more > 0 else ""
        raise FitError(f"{what} failed (exit {proc.returncode}): {helm_failure_line(stderr or stdout)}{extra}")
    if "\ufffd" in stdout:
        raise FitError(f"{what}: {binary} printed output that is not UTF-8, not a rendered chart; "
                       "is --helm (or $VLLM_EKS_HELM) a helm binary?")
    try:
        docs = list(yaml.safe_load_all(stdout))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise FitError(f"{what}: {binary} printed output that is not YAML ({problem}{where}); "
                       "is --helm (or $VLLM_EKS_HELM) a helm binary?") from None
    objects = [d for d in docs if d is not None and d != {}]
    odd = next((d for d in objects if not (isinstance(d, dict) and isinstance(d.get("kind"), str))), None)
    if odd is not None:
        raise FitError(f"{what}: {binary} printed a document that is no Kubernetes object ({type(odd).__name__}), "
                       "not a rendered chart; is --helm (or $VLLM_EKS_HELM) a helm binary?")
    return objects


_AUTOSCALED_KINDS = ("Deployment", "LeaderWorkerSet")


def _at_autoscaling_maximum(objects: list[dict[str, Any]], observability: Path) -> list[dict[str, Any]]:
    """An autoscaled Deployment or LeaderWorkerSet carries no replica count (the chart leaves it
    to KEDA): it is checked at the most replicas the scenario's ScaledObject may set, so the pool's
    limits must admit a full scale-out, not only the first pod."""
    if not observability.is_file():
        return objects
    try:
        auto = (yaml.safe_load(observability.read_text()) or {}).get("autoscaling") or {}
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise FitError(f"{observability}: not a YAML values file ({type(e).__name__})") from None
    if not isinstance(auto, dict) or not auto.get("enabled", True) or "maxReplicaCount" not in auto:
        return objects
    most = auto["maxReplicaCount"]
    if not isinstance(most, int) or isinstance(most, bool) or most < 0:
        raise FitError(f"{observability}: autoscaling.maxReplicaCount must be a whole number >= 0, got {most!r}")
    out = []
    for obj in objects:
        spec = obj.get("spec")
        if obj.get("kind") in _AUTOSCALED_KINDS and isinstance(spec, dict) and "replicas" not in spec:
            obj = {**obj, "spec": {**spec, "replicas": most}}
        out.append(obj)
    return out


def _ray_at_autoscaling_maximum(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A RayService or RayCluster with the in-tree autoscaler may grow each worker group to its
    maxReplicas (Ray Serve's autoscaling asks for the pods, the KubeRay autoscaler adds them), so
    its groups are checked at that size: the pool's limits must admit a full scale-out."""
    out = []
    for obj in objects:
        kind, spec = obj.get("kind"), obj.get("spec")
        if kind not in ("RayService", "RayCluster") or not isinstance(spec, dict):
            out.append(obj)
            continue
        cluster = spec.get("rayClusterConfig") if kind == "RayService" else spec
        if not isinstance(cluster, dict) or not cluster.get("enableInTreeAutoscaling"):
            out.append(obj)
            continue
        groups = [{**g, "replicas": g["maxReplicas"]} if isinstance(g, dict) and isinstance(g.get("maxReplicas"), int)
                  else g for g in cluster.get("workerGroupSpecs") or []]
        cluster = {**cluster, "workerGroupSpecs": groups}
        out.append({**obj, "spec": {**spec, "rayClusterConfig": cluster} if kind == "RayService" else cluster})
    return out


def check_fit(scenario_dir: str | os.PathLike[str], *, charts_dir: str | os.PathLike[str] | None = None,
              helm: str | None = None, infra_objects: list[dict[str, Any]] | None = None,
              server_objects: list[dict[str, Any]] | None = None,
              catalog: dict[str, Hardware] | None = None) -> list[Mismatch]:
    """Render `gpu-infra.yaml` and `vllm-inference.yaml` of a scenario folder with helm and check
    that every model-server pod fits a pool, keeping the DaemonSet reserve of its plan.json on
    every node. Pre-rendered objects may be passed instead; `catalog` adds to the instance
    catalog (a plan's node outside it)."""
    scenario = Path(scenario_dir)
    if infra_objects is None or server_objects is None:
        charts = resolve_charts_dir(charts_dir)
    if infra_objects is None:
        infra_objects = render_chart(charts / "gpu-infra", scenario / "gpu-infra.yaml", "gpu-infra", "gpu-infra", helm)
    if server_objects is None:
        server_objects = render_chart(charts / "vllm-inference", scenario / "vllm-inference.yaml", "vllm", "llm", helm)
    server_objects = _ray_at_autoscaling_maximum(
        _at_autoscaling_maximum(server_objects, scenario / "observability.yaml"))
    plan = scenario / "plan.json"
    reserve = Reserve.of_plan(json.loads(plan.read_text())) if plan.is_file() else Reserve()
    return check_objects(infra_objects, server_objects, reserve=reserve,
                         catalog={**instance_catalog(), **catalog} if catalog else None)

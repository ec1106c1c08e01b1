"""Rendered workload objects -> the pod templates they stand for, and a pod's effective requests.

One walker for every reader of rendered releases: the `check-fit` checker (vllm_eks.check.scheduling),
the test harness's pod and NetworkPolicy model (tests/harness/pods.py), the cluster tier's node
arithmetic (tests/cluster/shapes.py).

Pod templates, with how many pods each stands for as the controllers create them:
- Pod: itself, 1. Deployment, StatefulSet, ReplicaSet: `replicas` (default 1); a Deployment's
  rolling-update surge (`maxSurge`, default 25%, 0 for Recreate) beside it. Job: `parallelism`.
- LeaderWorkerSet (leaderworkerset.x-k8s.io): per group one leader from `leaderTemplate` (the
  `workerTemplate` when there is none: the LWS controller builds the leader from it) and
  `size - 1` workers; `replicas` groups; surge in groups (`rollingUpdateConfiguration.maxSurge`).
- RayCluster, RayService (ray.io): one head; per worker group max(replicas, minReplicas, 1) x
  numOfHosts pods.
- DaemonSet: only when asked (`daemonsets=True`), count 0 (one per node it runs on).
Helm hooks (test pods, hook Jobs) are skipped: they are no serving capacity.

Effective requests (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/
#resource-sharing-within-containers, KEP-753): a missing request defaults to the limit; app
containers and restartable init containers (`restartPolicy: Always`, sidecars) are summed; each
regular init container runs alone beside the sidecars started before it, so the pod needs at
least max over them of (its request + those sidecars')."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from vllm_eks.core.units import parse_quantity


@dataclass
class PodTemplate:
    workload: str                 # "Kind/name"
    role: str                     # "pod", "leader", "worker", "head", "worker group <name>"
    spec: dict[str, Any]
    count: int
    surge: int = 0
    labels: dict[str, str] = field(default_factory=dict)   # the template's metadata.labels
    namespace: str = ""
    group: str = ""               # a Ray worker group's groupName

    @property
    def kind(self) -> str:
        return self.workload.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.workload.split("/", 1)[1]

    def requests(self) -> dict[str, Decimal]:
        return pod_requests(self.spec)


def container_requests(container: dict[str, Any]) -> dict[str, Decimal]:
    res = container.get("resources") or {}
    out: dict[str, Decimal] = {}
    # An absent request defaults to the limit (the API server does this on admission).
    for source in (res.get("limits") or {}, res.get("requests") or {}):
        for name, q in source.items():
            out[name] = parse_quantity(q)
    return out


def pod_requests(spec: dict[str, Any]) -> dict[str, Decimal]:
    """Effective requests as the scheduler sums them: app containers plus restartable
    (sidecar) init containers, or the largest ordinary init container if that is bigger."""
    total: dict[str, Decimal] = defaultdict(Decimal)
    init_peak: dict[str, Decimal] = defaultdict(Decimal)
    sidecars: dict[str, Decimal] = defaultdict(Decimal)
    for c in spec.get("initContainers") or []:
        req = container_requests(c)
        if c.get("restartPolicy") == "Always":
            for k, v in req.items():
                sidecars[k] += v
        else:
            for k, v in req.items():
                init_peak[k] = max(init_peak[k], v + sidecars[k])
    for c in spec.get("containers") or []:
        for k, v in container_requests(c).items():
            total[k] += v
    for k, v in sidecars.items():
        total[k] += v
    for k, v in init_peak.items():
        total[k] = max(total[k], v)
    return dict(total)


def _surge(replicas: int, strategy: dict[str, Any] | None) -> int:
    strategy = strategy or {}
    if strategy.get("type") == "Recreate":
        return 0
    raw = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(raw, str) and raw.endswith("%"):
        return math.ceil(replicas * int(raw[:-1]) / 100)
    return int(raw)


def _is_hook(obj: dict[str, Any]) -> bool:
    return "helm.sh/hook" in ((obj.get("metadata") or {}).get("annotations") or {})


def _labels(template: dict[str, Any]) -> dict[str, str]:
    return dict((template.get("metadata") or {}).get("labels") or {})


def _ray_templates(workload: str, namespace: str, cluster_spec: dict[str, Any]) -> list[PodTemplate]:
    out: list[PodTemplate] = []
    head = (cluster_spec.get("headGroupSpec") or {}).get("template")
    if head:
        out.append(PodTemplate(workload, "head", head.get("spec") or {}, 1, labels=_labels(head), namespace=namespace))
    for group in cluster_spec.get("workerGroupSpecs") or []:
        replicas = max(int(group.get("replicas") or 0), int(group.get("minReplicas") or 0), 1)
        hosts = int(group.get("numOfHosts") or 1)
        template = group.get("template") or {}
        name = group.get("groupName", "?")
        out.append(PodTemplate(workload, f"worker group {name}", template.get("spec") or {}, replicas * hosts,
                               labels=_labels(template), namespace=namespace, group=name))
    return out


def pod_templates(objects: Iterable[dict[str, Any]], daemonsets: bool = False) -> list[PodTemplate]:
    """Every pod template in the objects, with how many pods it stands for."""
    out: list[PodTemplate] = []
    for obj in objects:
        if _is_hook(obj):
            continue  # helm test pods and hooks are not serving capacity
        kind = obj.get("kind", "")
        meta = obj.get("metadata") or {}
        name = f"{kind}/{meta.get('name', '?')}"
        ns = meta.get("namespace", "")
        spec = obj.get("spec") or {}
        if kind == "Pod":
            out.append(PodTemplate(name, "pod", spec, 1, labels=dict(meta.get("labels") or {}), namespace=ns))
        elif kind in ("Deployment", "StatefulSet", "ReplicaSet", "Job"):
            replicas = int(spec.get("parallelism" if kind == "Job" else "replicas", 1) or 0)
            surge = _surge(replicas, spec.get("strategy")) if kind == "Deployment" else 0
            template = spec.get("template") or {}
            out.append(PodTemplate(name, "pod", template.get("spec") or {}, replicas, surge,
                                   labels=_labels(template), namespace=ns))
        elif kind == "DaemonSet" and daemonsets:
            template = spec.get("template") or {}
            out.append(PodTemplate(name, "pod", template.get("spec") or {}, 0, labels=_labels(template), namespace=ns))
        elif kind == "LeaderWorkerSet":
            replicas = int(spec.get("replicas", 1))
            lwt = spec.get("leaderWorkerTemplate") or {}
            size = int(lwt.get("size", 1))
            rolling = ((spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {})
            surge_groups = int(rolling.get("maxSurge", 0)) if not str(rolling.get("maxSurge", 0)).endswith("%") \
                else math.ceil(replicas * int(str(rolling["maxSurge"])[:-1]) / 100)
            worker = lwt.get("workerTemplate") or {}
            leader = lwt.get("leaderTemplate") or worker
            out.append(PodTemplate(name, "leader", leader.get("spec") or {}, replicas, surge_groups,
                                   labels=_labels(leader), namespace=ns))
            if size > 1:
                out.append(PodTemplate(name, "worker", worker.get("spec") or {}, replicas * (size - 1),
                                       surge_groups * (size - 1), labels=_labels(worker), namespace=ns))
        elif kind == "RayCluster":
            out += _ray_templates(name, ns, spec)
        elif kind == "RayService":
            out += _ray_templates(name, ns, spec.get("rayClusterConfig") or {})
    return out

"""EC2 vCPU quota pre-flight: which Service Quotas bucket the GPU pool's instances count against,
and how many vCPUs of it the deployment needs at its minimum, at its maximum and at the peak of a
rollout (a Deployment or LeaderWorkerSet rolling update, or a RayService upgrade).

EC2 counts running On-Demand instances, and running plus requested Spot instances, in vCPUs per
bucket of instance families (the Amazon EC2 User Guide, "Spot Instance quotas": All P / G and VT /
Inf / Trn / DL / F / X / Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests; the On-Demand
buckets are named "Running On-Demand ... instances" for the same families). A new account starts
with zero in the P and G and VT buckets (seed 004 section 2), so a deployment stays Pending until
the quota is raised: two g6.8xlarge (32 vCPUs each) need 64 vCPUs of the G and VT quota."""

from __future__ import annotations

import re

from vllm_eks.core.derivations import Derivations
from vllm_eks.core.errors import InvalidOptionError, QuotaShortfallError
from vllm_eks.planning.pools import nodes_for, ray_upgrade_nodes
from vllm_eks.spec.plan import LayoutPlan, PhasePlan, PoolPlan, QuotaPlan, ServeAutoscaling

# Instance family class -> the bucket's name in the On-Demand and in the Spot quota lists.
BUCKETS: dict[str, tuple[str, str]] = {
    "P": ("Running On-Demand P instances", "All P Spot Instance Requests"),
    "G": ("Running On-Demand G and VT instances", "All G and VT Spot Instance Requests"),
    "Inf": ("Running On-Demand Inf instances", "All Inf Spot Instance Requests"),
    "Trn": ("Running On-Demand Trn instances", "All Trn Spot Instance Requests"),
    "DL": ("Running On-Demand DL instances", "All DL Spot Instance Requests"),
    "F": ("Running On-Demand F instances", "All F Spot Instance Requests"),
    "X": ("Running On-Demand X instances", "All X Spot Instance Requests"),
    "Standard": ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
                 "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests"),
}
# Family prefixes, longest first where one prefix starts another (inf before i, dl before d).
_FAMILY_CLASS = (("inf", "Inf"), ("trn", "Trn"), ("dl", "DL"), ("vt", "G"), ("p", "P"), ("g", "G"),
                 ("f", "F"), ("x", "X"), ("a", "Standard"), ("c", "Standard"), ("d", "Standard"),
                 ("h", "Standard"), ("i", "Standard"), ("m", "Standard"), ("r", "Standard"),
                 ("t", "Standard"), ("z", "Standard"))
SPOT_PREFIX = "spot-"
ON_DEMAND_PREFIX = "on-demand-"

# maxSurge of charts/vllm-inference's strategy.rollingUpdate default, which the Deployment and the
# LeaderWorkerSet (rolloutStrategy.rollingUpdateConfiguration) both take: 0, so a rolling update
# replaces one pod or group at a time on the nodes already there (tests/unit/test_quota.py checks
# the chart and the values model keep it).
ROLLOUT_MAX_SURGE = 0


def instance_class(instance: str) -> str | None:
    """The quota class of an EC2 instance type (p5.48xlarge -> P, g6e.xlarge and vt1.3xlarge ->
    G, inf2.48xlarge -> Inf), or None when the family is not one EC2 lists."""
    family = instance.split(".", 1)[0].lower()
    for prefix, cls in _FAMILY_CLASS:
        if re.fullmatch(rf"{prefix}[a-z]?\d.*", family):
            return cls
    return None


def bucket_name(key: str) -> str:
    """The AWS name of a --quota bucket key (G, on-demand-G, spot-G)."""
    spot, cls = _split_key(key)
    return BUCKETS[cls][1 if spot else 0]


def _split_key(key: str) -> tuple[bool, str]:
    spot = key.startswith(SPOT_PREFIX)
    return spot, key[len(SPOT_PREFIX):] if spot else key


def _canonical(key: str) -> str | None:
    text = key.strip()
    lowered = text.lower()
    spot = lowered.startswith(SPOT_PREFIX)
    if spot:
        text = text[len(SPOT_PREFIX):]
    elif lowered.startswith(ON_DEMAND_PREFIX):
        text = text[len(ON_DEMAND_PREFIX):]
    cls = next((c for c in BUCKETS if c.lower() == text.lower()), None)
    return None if cls is None else (SPOT_PREFIX + cls if spot else cls)


def parse_quotas(values: tuple[str, ...] | list[str]) -> dict[str, int]:
    """--quota BUCKET=VCPUS values -> {bucket key: vCPUs}. BUCKET is a class (P, G, Inf, Trn, DL,
    F, X, Standard; optionally on-demand-P) for the On-Demand bucket, or spot-CLASS for the Spot one."""
    out: dict[str, int] = {}
    valid = ", ".join([*BUCKETS, *(SPOT_PREFIX + c for c in BUCKETS)])
    for value in values:
        key, sep, number = value.partition("=")
        bucket = _canonical(key) if sep else None
        if bucket is None:
            raise InvalidOptionError(f"--quota: give BUCKET=VCPUS (got {value!r}); BUCKET is one of {valid}")
        try:
            vcpus = int(number.strip())
        except ValueError:
            vcpus = -1
        if vcpus < 0:
            raise InvalidOptionError(f"--quota: the quota is a whole number of vCPUs >= 0 (got {value!r})")
        if bucket in out and out[bucket] != vcpus:
            raise InvalidOptionError(f"--quota {key.strip()} given twice ({out[bucket]} and {vcpus})")
        out[bucket] = vcpus
    return out


def plan_quota(*, instance: str, vcpus_per_node: int | None, gpus_per_node: int, topology: str, layout: LayoutPlan,
               pool: PoolPlan, serve: ServeAutoscaling | None, prefill: PhasePlan | None,
               decode: PhasePlan | None) -> QuotaPlan:
    """The quota section of the Plan: the bucket and the nodes and vCPUs at the minimum, the
    maximum, the rollout peak and the NodePool's GPU limit, with their derivations."""
    d = Derivations()
    cls = instance_class(instance)
    on_demand, spot = BUCKETS[cls] if cls else (None, None)
    d.add("quota_bucket", f"{cls or 'unknown'}: {on_demand} / {spot}" if cls else "unknown",
          f"instance family of {instance}" + ("" if cls else " is not one the EC2 quota lists name"),
          "EC2 counts instances in vCPUs per family bucket, On-Demand and Spot apart; P and G and VT "
          "start at 0 on a new account")
    shape = (layout.nodes_per_replica, layout.gpus_per_pod, gpus_per_node)
    if prefill is not None and decode is not None:
        low = prefill.replicas + decode.replicas
        why_min = f"prefill {prefill.replicas} + decode {decode.replicas} copies (sized pools, always running)"
    elif serve is not None:
        low = max(1, serve.min_replicas)
        why_min = f"Ray Serve min_replicas {low}"
    else:
        low = pool.autoscaling_min_replicas
        why_min = f"autoscaling minimum {low} replica(s)"
    nodes_min = nodes_for(low, *shape)
    nodes_max = pool.pool_nodes
    if topology in ("ray-serve", "disaggregated"):
        extra = ray_upgrade_nodes(low, *shape)
        nodes_peak = nodes_max + extra
        upgrade = (f"RayService NewCluster upgrade: a second RayCluster of {low} starting copies "
                   f"({extra} node(s)) beside the first")
    else:
        kind = "LeaderWorkerSet" if topology == "multi-node" else "Deployment"
        top = pool.autoscaling_max_replicas
        nodes_peak = nodes_for(top + ROLLOUT_MAX_SURGE, *shape)
        upgrade = (f"{kind} rolling update at {top} replicas with maxSurge {ROLLOUT_MAX_SURGE}: "
                   f"{top + ROLLOUT_MAX_SURGE} {'groups' if kind == 'LeaderWorkerSet' else 'pods'} at most")
    nodes_limit = pool.pool_gpu_limit // gpus_per_node
    vcpu = vcpus_per_node or None

    def need(nodes: int) -> int | None:
        return nodes * vcpu if vcpu else None

    def show(nodes: int) -> str:
        return f"{nodes * vcpu} vCPUs" if vcpu else f"{nodes} node(s), vCPUs unknown"

    per = (f"x {vcpu} vCPUs of {instance}" if vcpu
           else f"({instance} is not in the catalog: vCPUs unknown, give --vcpus)")
    d.add("quota_vcpus_min", show(nodes_min), f"{nodes_min} node(s) {per}; {why_min}")
    d.add("quota_vcpus_max", show(nodes_max), f"pool nodes {nodes_max} {per}; autoscaling maximum "
          f"{pool.autoscaling_max_replicas} replica(s)")
    d.add("quota_vcpus_upgrade_peak", show(nodes_peak), f"{nodes_peak} node(s) {per}; {upgrade}",
          "a quota below this leaves the rollout Pending")
    d.add("quota_vcpus_pool_limit", show(nodes_limit), f"NodePool GPU limit {pool.pool_gpu_limit} / {gpus_per_node} "
          f"GPUs = {nodes_limit} node(s) {per}",
          "the most the pool may launch (it also admits a node Karpenter starts before draining a drifted one)")
    return QuotaPlan(quota_instance_class=cls, quota_on_demand_bucket=on_demand, quota_spot_bucket=spot,
                     quota_vcpus_per_node=vcpu, quota_nodes_min=nodes_min, quota_nodes_max=nodes_max,
                     quota_nodes_upgrade_peak=nodes_peak, quota_nodes_pool_limit=nodes_limit,
                     quota_vcpus_min=need(nodes_min), quota_vcpus_max=need(nodes_max),
                     quota_vcpus_upgrade_peak=need(nodes_peak), quota_vcpus_pool_limit=need(nodes_limit),
                     quota_upgrade=upgrade, derivations=d.items)


def summary(q: QuotaPlan) -> str:
    """One line of the quota figures, for the plan table, check-fit and the scenario README."""
    if q.quota_vcpus_per_node is None:
        figures = (f"{q.quota_nodes_min} / {q.quota_nodes_max} / {q.quota_nodes_upgrade_peak} nodes "
                   "(min / max / upgrade peak; vCPUs unknown)")
    else:
        figures = (f"{q.quota_vcpus_min} / {q.quota_vcpus_max} / {q.quota_vcpus_upgrade_peak} vCPUs "
                   f"(min / max / upgrade peak; NodePool limit {q.quota_vcpus_pool_limit})")
    return f"{q.quota_instance_class or 'unknown'} bucket: {figures}"


def check_quotas(q: QuotaPlan | None, quotas: dict[str, int], capacity_types: tuple[str, ...] = ()) -> None:
    """Raise QuotaShortfallError, naming --quota, the bucket, the need and the quota, when a given
    quota of the pool's instance class is below the vCPUs needed at the maximum or at the upgrade
    peak. Each bucket must hold the whole need: the pool may launch every node as either capacity
    type it allows. With `capacity_types` (values --capacity-type), a bucket of a capacity type the
    pool does not use is not checked (reserved capacity counts as On-Demand). Quotas of other
    classes do not apply and are not checked."""
    if not quotas:
        return
    if q is None:
        raise InvalidOptionError("--quota: this plan.json has no quota figures (written before quotas were "
                                 "planned); regenerate the folder with `vllm-eks values`")
    used = {"spot" if t == "spot" else "on-demand" for t in capacity_types}
    for key, vcpus in quotas.items():
        spot, cls = _split_key(key)
        if cls != q.quota_instance_class or (used and ("spot" if spot else "on-demand") not in used):
            continue
        if q.quota_vcpus_per_node is None:
            raise InvalidOptionError("--quota: the vCPUs of the pool's instance are unknown (hardware outside "
                                     "the catalog: give --vcpus), so the quota cannot be checked "
                                     f"(got '{key}={vcpus}')")
        for what, need, nodes in (("the autoscaling maximum", q.quota_vcpus_max, q.quota_nodes_max),
                                  ("the upgrade peak", q.quota_vcpus_upgrade_peak, q.quota_nodes_upgrade_peak)):
            if need is not None and need > vcpus:
                raise QuotaShortfallError(
                    f"--quota {key}={vcpus}: {bucket_name(key)} is {need - vcpus} vCPUs short: the deployment "
                    f"needs {need} vCPUs at {what} ({nodes} node(s) x {q.quota_vcpus_per_node} vCPUs), "
                    f"the quota is {vcpus}")

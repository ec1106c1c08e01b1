"""Reading a RayService's status and the KubeRay operator's log the way the tests compare them
with KubeRay v1.6.2's source (ray-operator/controllers/ray/rayservice_controller.go).

The operator writes the status once per reconcile, at the end of `Reconcile` (`calculateStatus`,
then `r.Status().Update`). `reconcileServe` runs before that and returns an error when the
dashboard does not answer, which is always the case on kwok once a head pod is Ready: that
reconcile then writes no status at all. So the log records below are how a test knows which path
a reconcile took."""

from __future__ import annotations

from typing import Any

from tests.cluster.controlplane import KUBERAY_OPERATOR
from tests.cluster.kube import Cluster

RAY = ("ray.io", "v1")

# Log messages of rayservice_controller.go (v1.6.2) that name the path a reconcile took.
SERVE_ON_ACTIVE = "Reconciling the Serve applications for active cluster"  # no new cluster needed
SERVE_ON_PENDING = "Reconciling the Serve applications for pending cluster"
DASHBOARD_UNREACHABLE = "failed to get Serve application statuses from the dashboard"  # getAndCheckServeStatus
DANGLING_SCHEDULED = "Scheduled dangling RayCluster for deletion"  # cleanUpRayClusterInstance

# The RayCluster annotation KubeRay compares with the RayService's rayClusterConfig to choose
# between in place and a new cluster (utils.HashWithoutReplicasAndWorkersToDeleteKey).
SPEC_HASH = "ray.io/hash-without-replicas-and-workers-to-delete"


def rayservice(c: Cluster, ns: str, name: str) -> dict[str, Any]:
    return c.custom.get_namespaced_custom_object(*RAY, ns, "rayservices", name)


def conditions(rs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """type -> (status, reason) of the RayService's conditions."""
    return {cd["type"]: (cd["status"], cd["reason"]) for cd in (rs.get("status") or {}).get("conditions") or []}


def cluster_names(rs: dict[str, Any]) -> tuple[str, str]:
    """(active, pending) RayCluster names of the status; "" where unset."""
    status = rs.get("status") or {}
    return ((status.get("activeServiceStatus") or {}).get("rayClusterName", ""),
            (status.get("pendingServiceStatus") or {}).get("rayClusterName", ""))


def generations(rs: dict[str, Any]) -> tuple[int, int]:
    """(metadata.generation, status.observedGeneration); Helm 4's --wait needs them equal."""
    return int(rs["metadata"]["generation"]), int((rs.get("status") or {}).get("observedGeneration", 0))


def operator_records(c: Cluster, message: str, ns: str, also: str = "") -> int:
    """How many of the operator's log records so far carry `message` (and `also`) for namespace
    `ns`. The console encoder prints the reconcile's context as JSON after the message, with the
    namespace quoted, so `"ns"` finds the records of a test's own namespace."""
    quoted = f'"{ns}"'
    return sum(1 for ln in c.plane.log_lines(KUBERAY_OPERATOR) if message in ln and quoted in ln and also in ln)

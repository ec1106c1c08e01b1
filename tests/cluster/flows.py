"""Steps the cluster tests share: Ready model-server pods, their arguments, clean-up."""

from __future__ import annotations

from pathlib import Path

import yaml

from .kube import Cluster

WAIT = "180s"


def ready_pods(cluster: Cluster, namespace: str, selector: str) -> list:
    pods = cluster.pods(namespace, selector)
    return [p for p in pods if p.status.phase == "Running" and p.metadata.deletion_timestamp is None
            and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]


def engine_args(pod) -> list[str]:
    c = pod.spec.containers[0]
    return [*(c.command or []), *(c.args or [])]


def cleanup(cluster: Cluster, helm: str, ns: str) -> None:
    """After a test, passed or failed: uninstall what is left (cluster-scoped objects such as
    NodePools would collide with the next install) and delete the namespace."""
    try:
        releases = cluster.helm_releases(helm, ns)
    except Exception:  # noqa: BLE001 - best effort after a failure already reported
        releases = []
    for rel in releases:
        try:
            cluster.helm(helm, ["uninstall", rel, "--namespace", ns, "--wait", "--timeout", WAIT])
        except Exception:  # noqa: BLE001
            pass
    cluster.delete_namespace(ns, wait=True)


def engine_change(values_file: Path) -> tuple[list[str], str]:
    """Helm flags that change one engine setting the way the chart documents for the values'
    topology, and the text that then appears in the stored workload object.

    single-node / multi-node take extra CLI arguments (engine.extraArgs); ray-serve and
    disaggregated pass engine keyword arguments through Ray Serve (the chart refuses
    engine.extraArgs there and names the engineKwargs keys instead)."""
    values = yaml.safe_load(values_file.read_text()) or {}
    topology = values.get("topology", "single-node")
    if topology == "ray-serve":
        return ["--set-json", "rayServe.engineKwargs.disable_log_stats=true"], "disable_log_stats"
    if topology == "disaggregated":
        flags = []
        for role in (values.get("disaggregated") or {}):
            flags += ["--set-json", f"disaggregated.{role}.engineKwargs.disable_log_stats=true"]
        return flags, "disable_log_stats"
    return ["--set-json", 'engine.extraArgs=["--disable-log-stats"]'], "--disable-log-stats"

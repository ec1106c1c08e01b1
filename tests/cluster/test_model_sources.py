"""model.source fsx and mountpointS3 on the real control plane: the first committed Deployment
scenario installed with each source, and the ray-serve scenario with mountpointS3 under the KubeRay
operator. The API server stores the static PersistentVolume (the FSx for Lustre or Mountpoint for
S3 CSI source) and the claim; kube-controller-manager's PersistentVolume binder binds the claim to
that volume by volumeName (no provisioner involved); the scheduler places the model-server pods
(the Deployment's, or the Ray head and workers KubeRay creates), whose volume is that claim, and
they become Ready. No CSI driver runs here: nothing mounts FSx or S3, so what the drivers do with
the volume attributes and mount options is not verified (docs/model-sources.md)."""

from __future__ import annotations

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import WAIT, cleanup, ready_pods
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.shapes import RELEASES, pod_groups, render_scenario_chart, scenario_shapes, shape_for
from tests.cluster.test_kuberay import SCENARIOS as RAY_SCENARIOS  # noqa: F401
from tests.cluster.test_kuberay import (  # noqa: F401  (kuberay: a fixture)
    gpu_limit,
    head_node_shape,
    kuberay,
    rayclusters,
    wait_cluster_ready,
)
from tests.cluster.test_routing import servers_on_gpu_nodes
from vllm_eks.core import contract

pytestmark = pytest.mark.cluster

HELM = "helm4"
SOURCES = {
    "fsx": ["--set", "model.source=fsx", "--set", "model.name=/models/qwen",
            "--set", "model.fsx.fileSystemId=fs-0123456789abcdef0",
            "--set", "model.fsx.dnsName=fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            "--set", "model.fsx.mountName=abcdef12"],
    "mountpointS3": ["--set", "model.source=mountpointS3", "--set", "model.name=/models/qwen",
                     "--set", "model.mountpointS3.bucket=models-bucket", "--set", "model.mountpointS3.prefix=hub/"],
}
DRIVERS = {"fsx": "fsx.csi.aws.com", "mountpointS3": "s3.csi.aws.com"}


def _bound(cluster: Cluster, manifest: list[dict], ns: str, source: str) -> tuple[str, str]:
    """The chart's PersistentVolume and claim, bound to each other by the PersistentVolume binder
    (read back from the API server): (volume name, claim name)."""
    (pv_obj,) = [o for o in manifest if o["kind"] == "PersistentVolume"]
    (pvc_obj,) = [o for o in manifest if o["kind"] == "PersistentVolumeClaim"]
    pv_name, claim = pv_obj["metadata"]["name"], pvc_obj["metadata"]["name"]

    def bound():
        pvc = cluster.core.read_namespaced_persistent_volume_claim(claim, ns)
        pv = cluster.core.read_persistent_volume(pv_name)
        return (pvc, pv) if pvc.status.phase == "Bound" and pv.status.phase == "Bound" else None

    pvc, pv = wait_for(f"claim {claim} bound to {pv_name}", bound, timeout=60)
    assert pvc.spec.volume_name == pv_name and pvc.spec.storage_class_name == ""
    assert pv.spec.claim_ref.name == claim and pv.spec.claim_ref.namespace == ns
    assert pv.spec.csi.driver == DRIVERS[source] and pv.spec.access_modes == ["ReadOnlyMany"]
    assert pv.spec.persistent_volume_reclaim_policy == "Retain"
    return pv_name, claim


def _mounts_the_claim(pod, claim: str) -> None:
    (vol,) = [v for v in pod.spec.volumes if v.name == "model"]
    assert vol.persistent_volume_claim.claim_name == claim and vol.persistent_volume_claim.read_only
    mounting = [c for c in pod.spec.containers if any(m.name == "model" for m in c.volume_mounts or [])]
    assert mounting, pod.metadata.name
    for c in mounting:
        (mount,) = [m for m in c.volume_mounts if m.name == "model"]
        assert mount.mount_path == "/models" and mount.read_only, (pod.metadata.name, c.name)


@pytest.mark.parametrize("source", list(SOURCES))
def test_static_volume_bound_and_servers_scheduled(cluster: Cluster, gpu_nodes, source: str) -> None:
    scenario, ns, server, server_selector = servers_on_gpu_nodes(f"src-{source.lower()}", gpu_nodes)
    release = RELEASES["vllm-inference"]
    cluster.ensure_namespace(ns)
    try:
        cluster.helm(HELM, ["install", release, scenarios.chart_package("vllm-inference"), "--namespace", ns,
                            "--values", str(scenario.values("vllm-inference")), "--wait", "--timeout", WAIT,
                            *SOURCES[source]])
        manifest = cluster.helm_manifest(HELM, release, ns)
        missing = [f"{o['kind']}/{o['metadata']['name']}" for o in manifest if not cluster.exists(o, ns)]
        assert not missing, f"objects Helm recorded but the API server does not have: {missing}"
        pv_name, claim = _bound(cluster, manifest, ns, source)
        servers = wait_for(f"{server.pods} Ready model-server pods",
                           lambda: (lambda ps: ps if len(ps) == server.pods else None)(
                               ready_pods(cluster, ns, server_selector)), timeout=60)
        for pod in servers:
            assert pod.spec.node_name, pod.metadata.name
            _mounts_the_claim(pod, claim)
        cluster.stats.objects_accepted += len(manifest)
        cluster.stats.pods_scheduled += len(servers)
    finally:
        cleanup(cluster, HELM, ns)
    # The volume is cluster-scoped: uninstalling the release removes it with the namespace's claim.
    wait_for(f"PersistentVolume {pv_name} removed by the uninstall",
             lambda: cluster.get("v1", "PersistentVolume", pv_name) is None or None, timeout=60)


def test_ray_head_and_workers_reference_the_bound_claim(kuberay: Cluster, gpu_nodes) -> None:
    """ray-serve with mountpointS3: KubeRay builds the RayCluster from the RayService, and its head
    and GPU workers, each with the chart's claim as its model volume, are scheduled and Ready."""
    c = kuberay
    (scenario,) = [s for s in RAY_SCENARIOS if s.plan["topology"] == "ray-serve"][:1]
    ns = f"{scenario.namespace}-src-ray"[:63].rstrip("-")
    infra = render_scenario_chart(scenario, "gpu-infra", ns)
    (rs_obj,) = [o for o in render_scenario_chart(scenario, "vllm-inference", ns) if o["kind"] == "RayService"]
    groups = [g for g in pod_groups([rs_obj]) if g.pool]
    head_nodes = gpu_nodes(head_node_shape(), 1)
    for pool in sorted({g.pool for g in groups}):
        shape = shape_for(next(g for g in groups if g.pool == pool), scenario_shapes(scenario))
        gpu_nodes(shape, gpu_limit(infra, pool) // int(shape.allocatable[contract.GPU_RESOURCE]))
    c.ensure_namespace(ns)
    base = ["--namespace", ns]
    try:
        c.helm(HELM, ["install", RELEASES["gpu-infra"], scenarios.chart_package("gpu-infra"), *base,
                      "--values", str(scenario.values("gpu-infra")), "--wait", "--timeout", WAIT])
        # No --wait: the RayService's Ready condition needs a Serve application (never on kwok).
        c.helm(HELM, ["install", RELEASES["vllm-inference"], scenarios.chart_package("vllm-inference"), *base,
                      "--values", str(scenario.values("vllm-inference")), *SOURCES["mountpointS3"]])
        manifest = c.helm_manifest(HELM, RELEASES["vllm-inference"], ns)
        _, claim = _bound(c, manifest, ns, "mountpointS3")
        (rc,) = wait_for("the operator to create a RayCluster", lambda: rayclusters(c, ns), timeout=60)
        pods = wait_cluster_ready(c, ns, rc["metadata"]["name"])
        roles = {p.metadata.labels.get("ray.io/node-type") for p in pods}
        assert roles == {"head", "worker"}, roles
        for pod in pods:
            _mounts_the_claim(pod, claim)
        assert {p.spec.node_name for p in pods if p.metadata.labels.get("ray.io/node-type") == "head"} <= set(head_nodes)
        c.stats.objects_accepted += len(manifest)
        c.stats.ray_pods_ready += len(pods)
        c.stats.pods_scheduled += len(pods)
    finally:
        cleanup(c, HELM, ns)

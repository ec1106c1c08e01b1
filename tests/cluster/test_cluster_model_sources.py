"""model.source fsx and mountpointS3 on the real control plane: the first committed Deployment
scenario installed with each source. The API server stores the static PersistentVolume (the FSx
for Lustre or Mountpoint for S3 CSI source) and the claim; kube-controller-manager's
PersistentVolume binder binds the claim to that volume by volumeName (no provisioner involved);
the scheduler places the model-server pods, whose volume is that claim, on the GPU nodes and they
become Ready. No CSI driver runs here: nothing mounts FSx or S3, so what the drivers do with the
volume attributes and mount options is not verified (docs/model-sources.md)."""

from __future__ import annotations

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import WAIT, cleanup, ready_pods
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.shapes import RELEASES
from tests.cluster.test_cluster_routing import servers_on_gpu_nodes

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


@pytest.mark.parametrize("source", list(SOURCES))
def test_static_volume_bound_and_servers_scheduled(cluster: Cluster, gpu_nodes, source: str) -> None:
    scenario, ns, server, server_selector = servers_on_gpu_nodes(f"src-{source.lower()}", gpu_nodes)
    release = RELEASES["vllm-inference"]
    cluster.ensure_namespace(ns)
    try:
        cluster.helm(HELM, ["install", release, str(scenarios.chart_dir("vllm-inference")), "--namespace", ns,
                            "--values", str(scenario.values("vllm-inference")), "--wait", "--timeout", WAIT,
                            *SOURCES[source]])
        manifest = cluster.helm_manifest(HELM, release, ns)
        missing = [f"{o['kind']}/{o['metadata']['name']}" for o in manifest if not cluster.exists(o, ns)]
        assert not missing, f"objects Helm recorded but the API server does not have: {missing}"
        (pv_obj,) = [o for o in manifest if o["kind"] == "PersistentVolume"]
        (pvc_obj,) = [o for o in manifest if o["kind"] == "PersistentVolumeClaim"]
        pv_name, claim = pv_obj["metadata"]["name"], pvc_obj["metadata"]["name"]

        # The binder's work, read back from the API server: claim and volume bound to each other.
        def bound():
            pvc = cluster.core.read_namespaced_persistent_volume_claim(claim, ns)
            pv = cluster.core.read_persistent_volume(pv_name)
            return (pvc, pv) if pvc.status.phase == "Bound" and pv.status.phase == "Bound" else None

        pvc, pv = wait_for(f"claim {claim} bound to {pv_name}", bound, timeout=60)
        assert pvc.spec.volume_name == pv_name and pvc.spec.storage_class_name == ""
        assert pv.spec.claim_ref.name == claim and pv.spec.claim_ref.namespace == ns
        assert pv.spec.csi.driver == DRIVERS[source] and pv.spec.access_modes == ["ReadOnlyMany"]
        assert pv.spec.persistent_volume_reclaim_policy == "Retain"

        servers = wait_for(f"{server.pods} Ready model-server pods",
                           lambda: (lambda ps: ps if len(ps) == server.pods else None)(
                               ready_pods(cluster, ns, server_selector)), timeout=60)
        for pod in servers:
            assert pod.spec.node_name, pod.metadata.name
            (vol,) = [v for v in pod.spec.volumes if v.name == "model"]
            assert vol.persistent_volume_claim.claim_name == claim and vol.persistent_volume_claim.read_only
            (c,) = [c for c in pod.spec.containers if any(m.name == "model" for m in c.volume_mounts or [])]
            (mount,) = [m for m in c.volume_mounts if m.name == "model"]
            assert mount.mount_path == "/models" and mount.read_only
        cluster.stats.objects_accepted += len(manifest)
        cluster.stats.pods_scheduled += len(servers)
    finally:
        cleanup(cluster, HELM, ns)
    # The volume is cluster-scoped: uninstalling the release removes it with the namespace's claim.
    wait_for(f"PersistentVolume {pv_name} removed by the uninstall",
             lambda: cluster.get("v1", "PersistentVolume", pv_name) is None or None, timeout=60)

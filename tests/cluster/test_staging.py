"""The staging Job (staging.*, docs/staging.md) on the real control plane: the first committed
Deployment scenario installed with the Job copying into a claim the chart creates (bound here to a
static PersistentVolume, there is no storage provisioner) and the servers loading from that claim,
or with the Job copying to S3 and the servers streaming from there. The API server stores every
object; the Job's pod, which tolerates no GPU taint, is scheduled on the general-purpose kwok node
(never a GPU node); the model-server pods carry the init container that waits for the Job's marker
and are scheduled on the GPU nodes. kwok runs no container, so the copy itself is shown by the
engine tier (tests/engine/test_staging.py), not here."""

from __future__ import annotations

import pytest

from tests.cluster import scenarios
from tests.cluster.flows import cleanup
from tests.cluster.kube import Cluster, wait_for
from tests.cluster.shapes import RELEASES
from tests.cluster.test_routing import servers_on_gpu_nodes, system_node_shape

pytestmark = pytest.mark.cluster

HELM = "helm4"
REPO = "Qwen/Qwen2.5-7B-Instruct"
CLAIM = "vllm-weights"
# A created ReadWriteMany claim must name its class (EKS's default EBS class cannot provision RWX);
# no provisioner runs here, so a static volume of the same class is what it binds to.
RWX_CLASS = "efs-sc"
S3_URI = "s3://models-bucket/qwen2.5-7b"
TARGETS = {
    "pvc": ["--set", "model.source=pvc", "--set", f"model.name=/models/{REPO}", "--set", f"model.pvc.claimName={CLAIM}",
            "--set", f"staging.pvc.claimName={CLAIM}", "--set", "staging.pvc.create=true", "--set", "staging.pvc.size=20Gi",
            "--set", f"staging.pvc.storageClassName={RWX_CLASS}"],
    "s3": ["--set", "model.source=s3", "--set", f"model.name={S3_URI}", "--set", "staging.target=s3",
           "--set", f"staging.s3Uri={S3_URI}"],
}


def static_volume(name: str) -> dict:
    """A PersistentVolume of the claim's StorageClass for the chart's claim to bind to."""
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "30Gi"}, "accessModes": ["ReadWriteMany"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": RWX_CLASS,
                     "hostPath": {"path": "/var/lib/staged-weights", "type": "DirectoryOrCreate"}}}


@pytest.mark.parametrize("target", list(TARGETS))
def test_staging_job_scheduled_and_servers_wait_for_it(cluster: Cluster, gpu_nodes, target: str) -> None:
    scenario, ns, server, server_selector = servers_on_gpu_nodes(f"stage-{target}", gpu_nodes)
    (system_node,) = gpu_nodes(system_node_shape(), 1)
    release = RELEASES["vllm-inference"]
    pv_name = f"{ns}-weights"[:63]
    cluster.ensure_namespace(ns)
    if target == "pvc":
        cluster.create(static_volume(pv_name))
    try:
        cluster.helm(HELM, ["install", release, scenarios.chart_package("vllm-inference"), "--namespace", ns,
                            "--values", str(scenario.values("vllm-inference")), "--set", "staging.enabled=true",
                            "--set", f"staging.repo={REPO}", "--set", "staging.tokenSecret.name=hf-token",
                            *TARGETS[target]])
        manifest = cluster.helm_manifest(HELM, release, ns)
        missing = [f"{o['kind']}/{o['metadata']['name']}" for o in manifest if not cluster.exists(o, ns)]
        assert not missing, f"objects Helm recorded but the API server does not have: {missing}"
        (job,) = [o for o in manifest if o["kind"] == "Job"]
        assert job["metadata"]["name"].endswith("-staging")
        claims = [o["metadata"]["name"] for o in manifest if o["kind"] == "PersistentVolumeClaim"]
        assert claims == ([CLAIM] if target == "pvc" else []), claims
        if target == "pvc":
            wait_for(f"claim {CLAIM} bound to {pv_name}", lambda: cluster.core.read_namespaced_persistent_volume_claim(
                CLAIM, ns).status.phase == "Bound" or None, timeout=60)

        # The Job's pod: created by the Job controller, scheduled on the untainted node.
        def job_pod():
            pods = [p for p in cluster.pods(ns, "app.kubernetes.io/component=staging") if p.spec.node_name]
            return pods[0] if pods else None
        pod = wait_for("the staging Job's pod scheduled", job_pod, timeout=90)
        assert pod.spec.node_name == system_node, (pod.spec.node_name, cluster.scheduler_reason(pod))
        assert pod.metadata.owner_references[0].kind == "Job"
        (c,) = pod.spec.containers
        assert c.command == ["python3", "/opt/vllm-eks/scripts/stage_weights.py"]
        assert c.security_context.read_only_root_filesystem and pod.spec.security_context.run_as_non_root
        if target == "pvc":
            assert [v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.name == "staging"] == [CLAIM]

        # The model-server pods: on the GPU nodes, each waiting for the marker first.
        servers = wait_for(f"{server.pods} scheduled model-server pods", lambda: (lambda ps: ps if len(ps) == server.pods
                           else None)([p for p in cluster.pods(ns, server_selector) if p.spec.node_name]), timeout=90)
        for p in servers:
            assert p.spec.node_name != system_node
            assert [i.name for i in p.spec.init_containers or []] == ["wait-for-staged-weights"], p.metadata.name
        cluster.stats.objects_accepted += len(manifest)
        cluster.stats.pods_scheduled += len(servers) + 1
    finally:
        cleanup(cluster, HELM, ns)
        if target == "pvc":
            try:
                cluster.resource("v1", "PersistentVolume").delete(name=pv_name)
            except Exception:  # noqa: BLE001 - best effort; the claim's deletion may have removed it
                pass

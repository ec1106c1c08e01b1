"""The control plane itself: versions Helm will see, CRDs served, simulated GPU nodes shaped like
each scenario's pools (labels, taints, allocatable survive kwok's node initialisation)."""

from __future__ import annotations

import os

import pykube
import pytest
from kubernetes import client

from tests.cluster import nodes, scenarios
from tests.cluster.controlplane import ControlPlane, bin_dir, pinned_versions
from tests.cluster.kube import Cluster
from tests.cluster.shapes import scenario_shapes
from tests.harness import chart_contract
from vllm_eks.core import contract

pytestmark = pytest.mark.cluster


def test_server_reports_pinned_version(cluster: Cluster) -> None:
    # Helm checks a chart's kubeVersion against this; an unstamped build says v0.0.0-master.
    info = client.VersionApi(cluster.api).get_code()
    assert info.git_version == pinned_versions()["K8S_VERSION"]
    out = cluster.helm("helm4", ["version", "--short"]).stdout
    assert out.startswith("v4.")


def test_every_pinned_crd_is_served(cluster: Cluster) -> None:
    served = {c.metadata.name for c in client.ApiextensionsV1Api(cluster.api).list_custom_resource_definition().items}
    expected = {"nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws",
                "leaderworkersets.leaderworkerset.x-k8s.io", "servicemonitors.monitoring.coreos.com"}
    assert expected <= served, f"missing CRDs: {expected - served}"


@pytest.mark.parametrize("scenario", scenarios.discover(), ids=lambda s: s.name)
def test_simulated_nodes_match_pool(cluster: Cluster, gpu_nodes, scenario: scenarios.Scenario) -> None:
    shapes = scenario_shapes(scenario)
    assert shapes, f"{scenario.name}: no GPU pool found (no NodePool rendered and no plan.json)"
    for shape in shapes:
        (name,) = gpu_nodes(shape, 1)
        node = cluster.core.read_node(name)
        row = nodes.instance(shape.instance)
        alloc = node.status.allocatable
        # kwok's node-initialize stage keeps the allocatable we set: extended resources survive.
        assert alloc[contract.GPU_RESOURCE] == str(row.gpu_count)
        if row.efa_max:
            assert alloc[contract.EFA_RESOURCE] == str(row.efa_max)
        assert alloc["cpu"] == row.alloc_cpu and alloc["memory"] == row.alloc_mem
        assert alloc["pods"] == shape.allocatable["pods"]
        assert node.metadata.labels[contract.INSTANCE_TYPE_LABEL] == shape.instance
        assert node.metadata.labels["karpenter.sh/nodepool"] == shape.pool
        taints = {(t.key, t.effect) for t in node.spec.taints or []}
        assert (chart_contract.rendered().gpu_taint_key, chart_contract.rendered().gpu_taint_effect) in taints, shape.source
        # The node keeps its lease fresh (kwok's heartbeat-with-lease stage), so the node
        # lifecycle controller does not taint it unreachable in the middle of a test.
        lease = client.CoordinationV1Api(cluster.api).read_namespaced_lease(name, "kube-node-lease")
        assert lease.spec.lease_duration_seconds == 40 and lease.spec.renew_time is not None


def test_pytest_helm_charts_fixture_reaches_cluster(kube_cluster, cluster: Cluster, monkeypatch) -> None:
    """pytest-helm-charts' kube_cluster works on this control plane (pykube client and its
    kubectl runner, which finds the kubectl built by `make cluster-tools`)."""
    names = {ns.name for ns in pykube.Namespace.objects(kube_cluster.kube_client)}
    assert {"default", "kube-system"} <= names
    monkeypatch.setenv("PATH", f"{bin_dir()}:{os.environ['PATH']}")
    version = kube_cluster.kubectl("version")
    assert version["serverVersion"]["gitVersion"] == pinned_versions()["K8S_VERSION"]


def test_stop_kills_every_component(tmp_path) -> None:
    """A second control plane, started and stopped: no component process group survives."""
    plane = ControlPlane(tmp_path / "plane")
    plane.workdir.mkdir()
    try:
        plane.start()
        assert set(plane.procs) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
    finally:
        plane.stop()
    for name, proc in plane.procs.items():
        assert proc.poll() is not None, f"{name} still running"
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)

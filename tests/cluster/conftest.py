"""Session fixture for the cluster tier: one control plane with kwok for the whole session,
the pinned CRDs installed, torn down (process groups killed, temp dir removed) even when tests
fail. Tests create their own simulated nodes with the `gpu_nodes` factory."""

from __future__ import annotations

import atexit
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# tests/conftest.py puts the repository root on sys.path.
from tests.cluster import chart_registry as chart_registry_module
from tests.cluster.chart_registry import ChartRegistry
from tests.cluster.controlplane import ControlPlane, bin_dir, missing_binaries, new_workdir, pinned_versions
from tests.cluster.kube import Cluster
from tests.cluster.nodes import NodeShape

_STATS: list[Cluster] = []


def _crd_dir() -> Path:
    value = os.environ.get("VLLM_EKS_CRD_DIR")
    if not value:
        raise pytest.UsageError("VLLM_EKS_CRD_DIR is not set: the Makefile sets it (default ../shared/crds)")
    return Path(value)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    missing = missing_binaries()
    if missing:
        pytest.fail(
            f"cluster binaries missing from {bin_dir()}: {', '.join(missing)}; run `make cluster-tools` "
            "(tools/cluster/build.sh builds them from their Go modules)", pytrace=False)
    workdir = new_workdir()
    plane = ControlPlane(workdir)
    keep = os.environ.get("VLLM_EKS_KEEP_CLUSTER_DIR") == "1"

    def teardown() -> None:
        plane.stop()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)

    # Also on interpreter exit, in case the session is interrupted before fixture finalisation.
    atexit.register(teardown)
    try:
        plane.start()
        c = Cluster.connect(plane)
        t0 = time.monotonic()
        c.install_crds(_crd_dir())
        c.stats.timings["crds_s"] = time.monotonic() - t0
        c.stats.timings.update(plane.timings)
        _STATS.append(c)
        yield c
    finally:
        teardown()
        atexit.unregister(teardown)


@pytest.fixture
def gpu_nodes(cluster: Cluster) -> Iterator:
    """Factory: gpu_nodes(shape, count) creates Ready kwok nodes; all are deleted afterwards."""
    created: list[str] = []

    def make(shape: NodeShape, count: int) -> list[str]:
        names = cluster.create_nodes(shape, count)
        created.extend(names)
        return names

    yield make
    cluster.delete_nodes(created)


@pytest.fixture(scope="session")
def chart_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChartRegistry]:
    """A local OCI registry with every chart package pushed, as a release publishes them."""
    registry = chart_registry_module.start(tmp_path_factory.mktemp("oci-registry") / "registry.log")
    try:
        yield registry
    finally:
        registry.stop()


@pytest.fixture(scope="session")
def kube_config(cluster: Cluster) -> str:
    """Overrides pytest-helm-charts' fixture of the same name, so its `kube_cluster` fixture
    (pykube-ng client, `kubectl` runner) talks to this cluster."""
    return str(cluster.plane.kubeconfig)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if not _STATS:
        return
    s = _STATS[0].stats
    v = pinned_versions()
    tr = terminalreporter
    tr.section("cluster tier")
    tr.write_line(
        f"control plane: kube-apiserver/controller-manager/scheduler {v['K8S_VERSION']}, etcd {v['ETCD_VERSION']}, "
        f"kwok {v['KWOK_VERSION']} (binaries in {bin_dir()})")
    t = s.timings
    tr.write_line(
        "start: etcd {:.1f}s, kube-apiserver {:.1f}s, whole control plane {:.1f}s, CRDs {:.1f}s".format(
            t.get("etcd_s", 0), t.get("apiserver_s", 0), t.get("start_s", 0), t.get("crds_s", 0)))
    tr.write_line(
        f"scenarios installed: {len(s.scenarios_installed)} ({', '.join(sorted(s.scenarios_installed)) or '-'}); "
        f"objects accepted: {s.objects_accepted}; CRDs: {s.crds_installed}; nodes created: {s.nodes_created}; "
        f"pods scheduled and Ready: {s.pods_scheduled}; upgrades: {s.upgrades}; rollbacks: {s.rollbacks}; "
        f"uninstalls: {s.uninstalls}; API-server rejections shown: {s.rejections_shown}; "
        f"helm: {', '.join(sorted(s.helm_versions)) or '-'}")
    if s.keda_hpas:
        tr.write_line(f"KEDA {v['KEDA_VERSION']}: its CRDs {t.get('keda_crds_s', 0):.1f}s, operator start {t.get('keda_start_s', 0):.1f}s; "
                      f"adapter {t.get('keda_adapter_s', 0):.1f}s; ScaledObjects turned into the Plan's HPA: {s.keda_hpas}; "
                      f"HPA rescales from Prometheus through the external metrics API: {s.keda_rescales}")
    if s.rayservices_reconciled:
        tr.write_line(
            f"KubeRay operator {v['KUBERAY_VERSION']} (started in {t.get('kuberay_s', 0):.1f}s): RayServices reconciled: "
            f"{s.rayservices_reconciled}; RayClusters created: {s.rayclusters_created}; Ray pods Ready on kwok nodes: "
            f"{s.ray_pods_ready}; upgrades whose second RayCluster the pool limit admitted: {s.ray_upgrades_admitted}")
    if s.lws_groups:
        tr.write_line(
            f"LeaderWorkerSet controller {v['LWS_VERSION']} (started with its webhooks in {t.get('lws_s', 0):.1f}s): "
            f"groups created: {s.lws_groups}; leader and worker pods created and Ready on kwok nodes: "
            f"{s.lws_pods_created}; groups recreated after a worker was deleted: {s.lws_recreates}; "
            f"size changes rolled out by helm upgrade: {s.lws_resizes}")

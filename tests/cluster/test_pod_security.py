"""The API server's own PodSecurity admission plugin on every pod the vllm-inference chart creates:
a namespace labelled `pod-security.kubernetes.io/enforce=restricted` (version latest), and each
pod spec of every `values/` scenario and `ci/` file (all four topologies, the helm test pods, and
the Ray pods with the containers KubeRay adds, tests/harness/pod_security.py) sent as a Pod with
server-side dry run, which runs admission and stores nothing. Admitted by default; the
securityContext.allowRoot opt-out is refused naming the restricted profile."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.cluster.kube import Cluster
from tests.harness import helm, pod_security
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.cluster

CHART = CHARTS / "vllm-inference"
FILES = sorted((CHART / "ci").glob("*-values.yaml")) + sorted(VALUES.glob("*/vllm-inference.yaml"))
NAMESPACE = "pss-restricted"
LABELS = {"pod-security.kubernetes.io/enforce": "restricted",
          "pod-security.kubernetes.io/enforce-version": "latest"}


# PriorityClasses created for the pods' priorityClassName (cluster-scoped): removed afterwards.
_PRIORITY_CLASSES: set[str] = set()


@pytest.fixture(scope="module")
def restricted_namespace(cluster: Cluster) -> Iterator[str]:
    cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE, labels=LABELS)))
    yield NAMESPACE
    cluster.delete_namespace(NAMESPACE, wait=False)
    for name in _PRIORITY_CLASSES:
        cluster.resource("scheduling.k8s.io/v1", "PriorityClass").delete(name=name)


def _dry_run(cluster: Cluster, namespace: str, pods: list[tuple[str, dict[str, Any], dict[str, str]]]) -> list[str]:
    """Each pod sent with dryRun=All; the refusals, one line each."""
    refused = []
    for i, (what, spec, annotations) in enumerate(pods):
        sa = spec.get("serviceAccountName")
        if sa:  # the ServiceAccount admission plugin needs it to exist
            try:
                cluster.core.create_namespaced_service_account(
                    namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=sa)))
            except ApiException as err:
                if err.status != 409:
                    raise
        pc = spec.get("priorityClassName")
        # the Priority admission plugin needs it to exist; system-* ones are built in (and reserved)
        if pc and not pc.startswith("system-") and pc not in _PRIORITY_CLASSES:
            cluster.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": pc}, "value": 1000})
            _PRIORITY_CLASSES.add(pc)
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"pss-{i}", "annotations": annotations}, "spec": spec}
        try:
            # the dynamic client sends the object as rendered (the typed one rejects integer quantities)
            cluster.resource("v1", "Pod").create(body=body, namespace=namespace, dry_run="All")
        except ApiException as err:
            refused.append(f"{what}: {err.status} {err.body}")
    return refused


@pytest.mark.parametrize("values_file", FILES, ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_restricted_admission_admits_every_pod(cluster: Cluster, restricted_namespace: str, values_file: Path) -> None:
    pods = pod_security.rendered_pod_specs(helm.render(CHART, [values_file], namespace=restricted_namespace))
    assert pods
    refused = _dry_run(cluster, restricted_namespace, pods)
    assert not refused, "\n".join(refused)


def test_allow_root_is_refused_by_restricted_admission(cluster: Cluster, restricted_namespace: str,
                                                       tmp_path: Path) -> None:
    extra = tmp_path / "root.yaml"
    extra.write_text("securityContext:\n  allowRoot: true\n")
    objects = helm.render(CHART, [CHART / "ci" / "01-defaults-values.yaml", extra], namespace=restricted_namespace)
    servers = [p for p in pod_security.rendered_pod_specs(objects) if p[0].startswith("Deployment/")]
    (refusal,) = _dry_run(cluster, restricted_namespace, servers)
    assert re.search(r'violates PodSecurity \\?"restricted:latest\\?"', refusal), refusal
    assert "runAsNonRoot" in refusal, refusal


GPU_INFRA = CHARTS / "gpu-infra"


@pytest.fixture(scope="module")
def privileged_namespace(cluster: Cluster) -> Iterator[str]:
    """Where the README installs gpu-infra: a namespace of its own, enforce=privileged."""
    name = "pss-privileged"
    cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(
        name=name, labels={"pod-security.kubernetes.io/enforce": "privileged"})))
    yield name
    cluster.delete_namespace(name, wait=False)


def test_gpu_infra_daemonsets_need_the_privileged_level(cluster: Cluster, restricted_namespace: str,
                                                        privileged_namespace: str) -> None:
    """Every gpu-infra DaemonSet pod (device plugins with EFA, DCGM exporter) is admitted in a
    privileged namespace and refused in the model server's restricted one, which is why the README
    installs gpu-infra into a namespace of its own."""
    efa = GPU_INFRA / "ci" / "02-efa-pool-values.yaml"  # all three DaemonSets render
    for namespace, admitted in ((privileged_namespace, True), (restricted_namespace, False)):
        pods = pod_security.rendered_pod_specs(helm.render(GPU_INFRA, [efa], namespace=namespace))
        assert {what.split("/")[0] for what, _, _ in pods} == {"DaemonSet"} and len(pods) == 3, \
            [what for what, _, _ in pods]
        refused = _dry_run(cluster, namespace, pods)
        if admitted:
            assert not refused, "\n".join(refused)
        else:
            assert len(refused) == len(pods), "\n".join(refused)
            assert all(re.search(r'violates PodSecurity \\?"restricted:latest\\?"', r) for r in refused), refused

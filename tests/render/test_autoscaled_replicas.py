"""Where an autoscaler owns the replica count (replicasManagedExternally: KEDA's ScaledObject in
charts/observability), the Deployment and the LeaderWorkerSet leave `replicas` out: a GitOps sync
renders without Helm's `lookup` (Argo CD), so any count the chart wrote would reset what KEDA set.
The cluster tier shows the upgrade keeping a scale-out (tests/cluster/test_autoscaled_upgrade.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
SCALED = {"Deployment": VALUES / "qwen2.5-7b-g6-xlarge" / "vllm-inference.yaml",
          "LeaderWorkerSet": VALUES / "llama-3.1-405b-p5-48xlarge-lws" / "vllm-inference.yaml"}


def _workload(values_file: Path, kind: str, managed: bool, helm_version: str) -> dict:
    objects = helm.render_case(CHART, values_file, {"replicasManagedExternally": managed, "replicas": 3},
                               helm_version, "vllm", "llm")
    (workload,) = [o for o in objects if o["kind"] == kind]
    return workload


@pytest.mark.parametrize("kind", list(SCALED))
def test_autoscaled_workloads_carry_no_replica_count(kind: str, helm_version: str) -> None:
    assert "replicas" not in _workload(SCALED[kind], kind, True, helm_version)["spec"]


@pytest.mark.parametrize("kind", list(SCALED))
def test_chart_owned_workloads_carry_the_values_count(kind: str, helm_version: str) -> None:
    assert _workload(SCALED[kind], kind, False, helm_version)["spec"]["replicas"] == 3

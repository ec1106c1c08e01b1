"""The multi-node diagnostics helm tests reach the groups that are live when they run, not the
chart's planned replica count: KEDA scales the LeaderWorkerSet, so the number of groups differs.

The chart is rendered with replicas 2; a fake Kubernetes API (tests/harness/fake_kube_api.py)
holds three live groups (scaled out) and then one (scaled in). Each test pod's container command
is run as the pod would run it: python3 commands with this interpreter and the chart's
files/diagnostics mounted where the ConfigMap goes; a `kubectl exec POD` command addresses POD.
The pods reached must be exactly the live group pods.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness import helm
from tests.harness.fake_kube_api import FakeKubeApi, lws_pods
from tests.harness.paths import CHARTS

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
CI = CHART / "ci" / "07-multi-node-lws-values.yaml"
NAMESPACE = "llm"
MOUNT = "/opt/vllm-eks/diagnostics"


def reached_pods(api: FakeKubeApi, command: list[str]) -> set[str]:
    """Run one test-pod container command against the fake API; the pods it exec'd into."""
    if command[:2] == ["kubectl", "exec"]:
        return {command[command.index("--") - 1]}
    assert command[0] == "python3", f"unexpected test pod command {command}"
    local = [sys.executable, *(a.replace(MOUNT, str(CHART / "files" / "diagnostics")) for a in command[1:])]
    before = len(api.execs)
    proc = subprocess.run(local, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **api.pod_env()})
    assert proc.returncode == 0, f"{command[:2]} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return {pod for pod, _, _ in api.execs[before:]}


@pytest.mark.parametrize("live_groups", [3, 1], ids=["scaled-out", "scaled-in"])
def test_diagnostics_reach_every_live_group(tmp_path: Path, live_groups: int) -> None:
    objects = helm.render(CHART, [CI], namespace=NAMESPACE, set_values={"replicas": 2, "replicasManagedExternally": False})
    (lws,) = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    name, size = lws["metadata"]["name"], lws["spec"]["leaderWorkerTemplate"]["size"]
    assert lws["spec"]["replicas"] == 2
    tests = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["annotations"].get("helm.sh/hook") == "test"
             and "-test-" in o["metadata"]["name"] and o["spec"]["serviceAccountName"].endswith("-diagnostics")]
    assert tests, "no diagnostics test pod rendered"
    api = FakeKubeApi(tmp_path / "api").start()
    try:
        api.pods = lws_pods(name, NAMESPACE, live_groups, size)
        live = {p["metadata"]["name"] for p in api.pods}
        for pod in tests:
            reached: set[str] = set()
            for c in pod["spec"]["containers"]:
                reached |= reached_pods(api, c["command"])
            assert reached == live, (
                f"{pod['metadata']['name']}: checks ran in {sorted(reached)}, but the live groups "
                f"({live_groups}, planned 2) have pods {sorted(live)}")
    finally:
        api.stop()

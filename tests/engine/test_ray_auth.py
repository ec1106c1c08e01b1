"""Ray's token authentication, which the chart turns on for the Ray topologies (`ray.auth.mode`
token -> `rayClusterConfig.authOptions: {mode: token}`), on the real Ray of the Ray image's release:
which requests to the head's dashboard, Jobs API, dashboard agent and GCS are refused.

What KubeRay does with authOptions is shown by the cluster tier (tests/cluster/test_kuberay.py:
a Secret per RayCluster with a generated `auth_token`, RAY_AUTH_MODE=token and RAY_AUTH_TOKEN in
every container that runs Ray). Here a Ray head is started as that leaves it: the rendered head's
rayStartParams with the environment KubeRay adds (a token of the form KubeRay generates, base64 of
32 random bytes: raycluster_controller.go createAuthSecret). Changes made to run here, and only
these: free loopback ports instead of 6379/8265/52365/8080 (several tests share the machine), the
dashboard bound to 127.0.0.1 instead of the rendered 0.0.0.0, a free Ray client port instead of
10001, one CPU, a temp dir of its own.

Whether the operator's own requests carry the token (it reads it from the Secret,
utils.GetRayDashboardClientFunc) needs a Ray process in a pod: only a real cluster (the kind
tier) shows that."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.engine.engine_env import EngineSetupMissing, ray_venv
from tests.engine.report import REPORT
from tests.engine.server import free_port
from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES
from vllm_eks.values.vllm_inference.images import RAY_VERSION

SCENARIO = VALUES / "llama-3.1-70b-g6e-12xlarge-rayservice"


def _rendered_head() -> tuple[dict, dict]:
    objects = helm.render(CHARTS / "vllm-inference", [SCENARIO / "vllm-inference.yaml"], helm="helm4",
                          release="vllm", namespace="llm")
    (rs,) = [o for o in objects if o["kind"] == "RayService"]
    cluster = rs["spec"]["rayClusterConfig"]
    return cluster, cluster["headGroupSpec"]["rayStartParams"]


@dataclass
class Head:
    venv: Path
    env: dict[str, str]
    gcs: int
    dashboard: int
    agent: int
    metrics: int

    def status(self, port: int, path: str, token: str | None, method: str = "GET", body: dict | None = None) -> int:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token is not None:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return 0  # not listening (yet)

    def driver(self, token: str | None) -> subprocess.CompletedProcess[str]:
        """A Ray driver connecting to the GCS, with the cluster's token or without one."""
        env = {k: v for k, v in self.env.items() if not k.startswith("RAY_AUTH_")}
        if token is not None:
            env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
        code = ("import ray, sys\n"
                f"ray.init(address='127.0.0.1:{self.gcs}', log_to_driver=False)\n"
                "print('joined', int(ray.cluster_resources().get('CPU', 0)))\n")
        return subprocess.run([str(self.venv / "bin" / "python"), "-c", code], env=env, capture_output=True,
                              text=True, timeout=120)


@pytest.fixture(scope="module")
def token_head() -> Iterator[tuple[Head, str]]:
    try:
        venv = ray_venv().root
    except EngineSetupMissing as e:
        pytest.fail(str(e), pytrace=False)
    from tests.engine.conftest import ServerPool

    ServerPool.stop_all()  # a vLLM server and a Ray node on two shared cores: one at a time
    cluster, params = _rendered_head()
    assert cluster.get("authOptions") == {"mode": "token"}, "the chart's default is token authentication"
    assert params.get("dashboard-host") == "0.0.0.0", params
    token = base64.b64encode(secrets.token_bytes(32)).decode()
    temp = Path(tempfile.mkdtemp(prefix="ray-auth-", dir="/tmp"))
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "RAY_USAGE_STATS_ENABLED": "0",
           "HOME": str(temp)}
    head = Head(venv, env, free_port(), free_port(), free_port(), free_port())
    rendered = {k: v for k, v in params.items() if k != "dashboard-host"}
    flags = [f"--{k}={v}" for k, v in rendered.items()]
    cmd = [str(venv / "bin" / "ray"), "start", "--head", *flags, "--num-cpus=1", f"--port={head.gcs}",
           "--dashboard-host=127.0.0.1", f"--dashboard-port={head.dashboard}",
           f"--dashboard-agent-listen-port={head.agent}", f"--metrics-export-port={head.metrics}",
           f"--ray-client-server-port={free_port()}",
           "--include-dashboard=true", f"--temp-dir={temp}/ray"]
    t0 = time.monotonic()
    # `--block` in a session of its own: every process of this head (Ray renames some, and the
    # raylet starts others) stays in that session, so the teardown stops exactly these.
    node = subprocess.Popen([*cmd, "--block"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while head.status(head.dashboard, "/api/gcs_healthz", None) != 200:
            assert node.poll() is None, f"ray start exited {node.returncode} (logs under {temp}/ray)"
            assert time.monotonic() < deadline, "the dashboard did not answer /api/gcs_healthz within 180 s"
            time.sleep(1)
        REPORT.note(f"ray auth: Ray {RAY_VERSION} head with RAY_AUTH_MODE=token up in {time.monotonic() - t0:.0f} s "
                    f"(rendered rayStartParams {rendered} kept)")
        yield head, token
    finally:
        stop_session(node)
        shutil.rmtree(temp, ignore_errors=True)


def _session_members(sid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(d.name))
    return out


def stop_session(node: subprocess.Popen[bytes], grace_s: float = 20.0) -> None:
    """SIGTERM to `ray start --block` and its group (Ray stops the node's processes), then SIGKILL
    to whatever of the session is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(node.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _session_members(node.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    for pid in _session_members(node.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        node.wait(timeout=10)


WRONG = base64.b64encode(b"not the cluster's token, 32 byte").decode()
JOB = {"entrypoint": "true"}
# (what, port attribute, method, path, body): the requests a pod that reaches the head could send.
PROTECTED = [
    ("Jobs API submission (runs code on the workers)", "dashboard", "POST", "/api/jobs/", JOB),
    ("Jobs API listing", "dashboard", "GET", "/api/jobs/", None),
    ("Serve deployment (what KubeRay applies)", "dashboard", "PUT", "/api/serve/applications/", {"applications": []}),
    ("cluster status", "dashboard", "GET", "/api/cluster_status", None),
    ("dashboard agent job API", "agent", "GET", "/api/job_agent/jobs/", None),
]
OPEN = [
    ("GCS health (KubeRay's head probe)", "dashboard", "/api/gcs_healthz"),
    ("raylet health (KubeRay's probes)", "agent", "/api/local_raylet_healthz"),
    ("metrics agent (Prometheus scrapes it)", "metrics", "/metrics"),
]


@pytest.mark.parametrize("what, port, method, path, body", PROTECTED, ids=[p[0] for p in PROTECTED])
def test_requests_without_the_token_are_refused(token_head, what, port, method, path, body) -> None:
    head, token = token_head
    number = getattr(head, port)
    without = head.status(number, path, None, method, body)
    wrong = head.status(number, path, WRONG, method, body)
    assert (without, wrong) == (401, 403), f"{what}: {without} without a token, {wrong} with a wrong one"
    with_token = head.status(number, path, token, method, body)
    assert with_token not in (401, 403), f"{what}: {with_token} with the cluster's token"
    REPORT.note(f"ray auth: {method} {path} ({what}): {without} without token, {wrong} wrong token, "
                           f"{with_token} with the token")


@pytest.mark.parametrize("what, port, path", OPEN, ids=[p[0] for p in OPEN])
def test_health_and_metrics_stay_open(token_head, what, port, path) -> None:
    """The kubelet's probes send no token; these endpoints answer without one (and say nothing
    that runs code)."""
    head, _ = token_head
    assert head.status(getattr(head, port), path, None) == 200, what


def test_the_gcs_refuses_a_driver_without_the_token(token_head) -> None:
    head, token = token_head
    refused = head.driver(None)
    assert refused.returncode != 0 and "joined" not in refused.stdout, refused.stdout
    assert "Authentication" in refused.stderr or "InvalidAuthToken" in refused.stderr, refused.stderr[-1500:]
    joined = head.driver(token)
    assert joined.returncode == 0 and "joined 1" in joined.stdout, joined.stderr[-1500:]
    REPORT.note("ray auth: GCS: a driver without the token is refused (InvalidAuthToken); with it, it joins")

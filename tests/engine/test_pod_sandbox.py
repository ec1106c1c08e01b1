"""The single-node server container run the way its pod runs it (tests/engine/pod_sandbox.py):
the rendered env (HOME, HF_HOME, VLLM_CACHE_ROOT, XDG_*, TRITON_*, FLASHINFER_WORKSPACE_BASE,
TMPDIR, TORCHINDUCTOR_CACHE_DIR) unchanged, a read-only root filesystem with only the rendered
writable volumes (the cache emptyDir, /tmp, the memory-backed /dev/shm) writable, as the pod's
runAsUser/runAsGroup/fsGroup with no /etc/passwd entry, no new privileges and no capabilities.
The real engine must start, answer, and log no refused write; everything it wrote is listed by
volume in the engine tier's report. Only the CPU substitutions of cpu.py change the arguments."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.engine.engine_env import SCRIPTS, base_env, engine_venv
from tests.engine.pod_sandbox import PodSandbox
from tests.engine.report import REPORT
from tests.engine.serving import prepare, sandboxed_server

SCENARIO = "qwen2.5-7b-g6-xlarge"
# What a write refused by the read-only root or by the id's permissions looks like in a log.
REFUSED = ("Read-only file system", "Permission denied", "EROFS", "EACCES")

PROBE = r"""
import json, os, sys
out = {}
for d in sys.argv[1:]:
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, ".sandbox-probe"), "w") as f:
            f.write("x")
        os.remove(os.path.join(d, ".sandbox-probe"))
        out[d] = "written"
    except OSError as e:
        out[d] = e.strerror
print(json.dumps({"ids": [os.getuid(), os.getgid(), os.getgroups()], "writes": out}))
"""


def _container(spec: dict) -> dict:
    (c,) = [c for c in spec["containers"] if c["name"] == "vllm"]
    return c


@pytest.fixture(scope="module")
def sandboxed(rendered_scenarios, tiny_models, engine_workdir: Path, server_pool):
    run = prepare(SCENARIO, rendered_scenarios[SCENARIO], tiny_models)
    spec = run.deployment_pod_spec
    container = _container(spec)
    box = PodSandbox.for_container(spec, container, engine_workdir / "pod-sandbox")
    server_pool.stop_current()  # one server at a time on this machine
    wrapper, env, srv = sandboxed_server(run, container, box, f"pod-sandbox-{SCENARIO}",
                                         engine_workdir / "logs" / f"pod-sandbox-{SCENARIO}.log")
    yield box, wrapper, env, container, srv
    srv.stop()


def test_sandbox_root_is_read_only_and_volumes_writable(sandboxed) -> None:
    """The sandbox itself: the checks below would be empty if writes outside the volumes worked."""
    box, wrapper, env, container, _ = sandboxed
    outside = ["/", "/etc", "/usr/local", "/var/cache", "/root", str(SCRIPTS), str(engine_venv().root)]
    inside = [env[k] for k in ("HOME", "HF_HOME", "VLLM_CACHE_ROOT", "XDG_CACHE_HOME", "TMPDIR")] + ["/dev/shm"]
    full = base_env()
    full.update(env)
    proc = subprocess.run([*wrapper, str(engine_venv().python), "-c", PROBE, *outside, *inside],
                          env=full, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["ids"] == [box.uid, box.gid, [box.fs_group]], got
    assert box.uid != 0
    assert {d: got["writes"][d] for d in outside} == {d: "Read-only file system" for d in outside}, got
    assert {d: got["writes"][d] for d in inside} == {d: "written" for d in inside}, got


def test_server_starts_and_answers_in_the_sandbox(sandboxed) -> None:
    box, _, _, _, srv = sandboxed
    srv.start()
    secs = srv.wait_healthy()
    REPORT.server(srv.name, secs)
    status = Path(f"/proc/{srv.proc.pid}/status").read_text()
    uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
    assert uid_line.split()[1:] == [str(box.uid)] * 4, uid_line
    status, body = srv.request("GET", "/v1/models")
    assert status == 200, body
    status, body = srv.request("POST", "/v1/completions", {
        "model": body["data"][0]["id"], "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0})
    assert status == 200, body
    assert body["usage"]["completion_tokens"] >= 1, body


def test_engine_writes_only_to_the_volumes(sandboxed) -> None:
    box, _, env, _, srv = sandboxed
    assert srv.healthy_after_s is not None, "the server did not start (previous test)"
    srv.stop()
    log = srv.log_text()
    refused = [line for line in log.splitlines() if any(r in line for r in REFUSED)]
    assert not refused, "refused writes in the server log:\n" + "\n".join(refused[:20])
    written = box.files_written()
    assert any(written.values()), "the engine wrote nothing at all: the volumes are not where it writes"
    by_var = {}
    for var in ("HOME", "HF_HOME", "VLLM_CACHE_ROOT", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TRITON_CACHE_DIR",
                "FLASHINFER_WORKSPACE_BASE", "TORCHINDUCTOR_CACHE_DIR", "TMPDIR"):
        root = env[var].rstrip("/") + "/"
        by_var[var] = sum(1 for files in written.values() for f in files if f.startswith(root))
    REPORT.note(f"pod sandbox ({SCENARIO}, uid {box.uid}, read-only root): files written per volume "
                + ", ".join(f"{m} {len(f)}" for m, f in written.items())
                + "; under " + ", ".join(f"{k} {n}" for k, n in by_var.items()))

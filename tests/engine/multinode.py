"""A multi-node scenario's LeaderWorkerSet group run here as separate processes: the rendered
leader and worker container commands (`/bin/sh -ec <contract; exec vllm serve "$@"> ARGS`) with
the environment the LWS controller gives them (LWS_LEADER_ADDRESS=127.0.0.1, LWS_GROUP_SIZE,
LWS_WORKER_INDEX), the kubelet's $(VAR) expansion, and the CPU substitutions of cpu.py.

Changes to the rendered command, all here and listed in tests/engine/README.md:
- the scripts mount path (/opt/vllm-eks/scripts) -> a folder holding the rendered ConfigMap's
  files (what the mount holds in the pod);
- the contract's `efa` capability is dropped: no libfabric or EFA device can exist on this
  machine (tests/unit/test_image_contracts.py runs those checks in sandboxes);
- `vllm` on PATH is a shim running vLLM's CLI from the engine venv (scripts/vllm_cli.py), and
  the engine venv's python3 comes first on PATH (the contract imports vllm with it);
- `--no-async-scheduling` is appended when the rendered list lacks it: vLLM's CPU platform runs
  without async scheduling, and pipeline parallelism across processes answered here only with it
  stated (../shared/facts/engine-tier.md); GPU pods keep vLLM's default."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import scenarios as sc
from .cpu import cpu_substitutions, tiny_model_for
from .engine_env import base_env, engine_venv, vllm_shim
from .server import free_port

SCRIPTS_MOUNT = "/opt/vllm-eks/scripts"
_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def lws_containers(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    (lws,) = [o for o in objects if o.get("kind") == "LeaderWorkerSet"]
    lwt = lws["spec"]["leaderWorkerTemplate"]
    (leader,) = lwt["leaderTemplate"]["spec"]["containers"]
    (worker,) = lwt["workerTemplate"]["spec"]["containers"]
    return lws, leader, worker


def scripts_configmap(objects: list[dict[str, Any]]) -> dict[str, str]:
    (cm,) = [o for o in objects if o.get("kind") == "ConfigMap" and o["metadata"]["name"].endswith("-scripts")]
    return cm["data"]


def _free_port_pair() -> int:
    """A free port P whose neighbour P+1 is free too (vLLM opens more ports near its master)."""
    for _ in range(50):
        p = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p + 1))
                return p
            except OSError:
                continue
    return free_port()


@dataclass
class GroupProcess:
    role: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        log.write(("# " + json.dumps({"argv": self.argv, "env": {k: v for k, v in self.env.items()
                                                                  if k.startswith(("LWS_", "VLLM_"))}}) + "\n").encode())
        log.flush()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def descendants(self) -> list[tuple[int, str]]:
        """(pid, command line) of this process and every process below it."""
        if self.proc is None:
            return []
        children: dict[int, list[int]] = {}
        cmd: dict[int, str] = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                cmd[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
        out, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop(0)
            if pid in cmd:
                out.append((pid, cmd[pid]))
            todo += children.get(pid, [])
        return out

    def stop(self) -> None:
        if self.proc is None:
            return
        pgid = self.proc.pid
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


@dataclass
class Group:
    scenario: str
    leader: GroupProcess
    worker: GroupProcess
    port: int
    served_model_name: str
    liveness_argv: list[str]
    changes: list[str] = field(default_factory=list)

    def stop(self) -> None:
        for p in (self.worker, self.leader):
            p.stop()


def _kubelet_expand(words: list[str], env: dict[str, str]) -> list[str]:
    return [_K8S_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), w) for w in words]


def prepare_group(name: str, objects: list[dict[str, Any]], tiny_models: dict[str, dict],
                  workdir: Path) -> Group:
    lws, lc, wc = lws_containers(objects)
    plan = json.loads((sc.VALUES / name / "plan.json").read_text())
    tiny = tiny_models[tiny_model_for(plan["model"])]["path"]
    size = lws["spec"]["leaderWorkerTemplate"]["size"]
    assert size == 2, f"{name}: group size {size}; this machine runs groups of two processes"

    # the scripts mount: the rendered ConfigMap's files
    mount = workdir / "scripts"
    mount.mkdir(parents=True, exist_ok=True)
    for fname, text in scripts_configmap(objects).items():
        (mount / fname).write_text(text)
    # `vllm` on PATH: vLLM's CLI from the engine venv
    shim = vllm_shim(workdir / "bin").parent
    venv = engine_venv()

    port, master = free_port(), _free_port_pair()
    changes = [f"scripts mount {SCRIPTS_MOUNT} -> {mount} (the rendered ConfigMap's files)",
               "contract capability efa dropped (no libfabric / EFA device on this machine)",
               f"vllm on PATH -> {shim / 'vllm'} (vLLM's CLI in the engine venv)"]
    procs = []
    for role, c, index in (("leader", lc, 0), ("worker", wc, 1)):
        env = base_env()
        env.update({"LWS_LEADER_ADDRESS": "127.0.0.1", "LWS_GROUP_SIZE": str(size),
                    "LWS_WORKER_INDEX": str(index),
                    "PATH": f"{shim}:{venv.root / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
        env.update({e["name"]: str(e["value"]) for e in c.get("env") or []
                    if "value" in e and e["name"].startswith("VLLM_EKS_")})
        command = [w.replace(SCRIPTS_MOUNT, str(mount)) for w in c["command"]]
        assert command[:2] == ["/bin/sh", "-ec"], command
        command[2] = re.sub(r"(\.sh)((?: [a-z-]+)*)", lambda m: m.group(1) + "".join(
            f" {x}" for x in m.group(2).split() if x != "efa"), command[2], count=1)
        args = _kubelet_expand([str(a) for a in c["args"]], env)
        sub = cpu_substitutions(args, tiny_model=tiny, port=port, keep_pipeline=True, master_port=master)
        out = list(sub.args)
        if "--no-async-scheduling" not in out and "--async-scheduling" not in out:
            out.append("--no-async-scheduling")
            sub.changes.append("--no-async-scheduling appended (CPU platform; PP across processes)")
        assert "--enforce-eager" not in out, "PP across processes fails on CPU with --enforce-eager"
        env.update(sub.env)
        if role == "leader":
            changes += sub.changes
        procs.append(GroupProcess(role, command + out, env, workdir / "logs" / f"{name}-{role}.log"))

    probe = lc["livenessProbe"]["exec"]["command"]
    probe = [w.replace(SCRIPTS_MOUNT, str(mount)) for w in probe]
    probe[probe.index("--port") + 1] = str(port)
    probe[0] = str(venv.python)
    served = sc.flag_value(lc["args"], "--served-model-name") or lc["args"][0]
    return Group(name, procs[0], procs[1], port, served, probe, changes)

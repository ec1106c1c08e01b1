"""Start, watch and stop a real vLLM OpenAI server (CPU build) on loopback.

Each server runs in its own process group (the API server spawns the engine core and a worker
process), so a server that does not stop on SIGTERM can be killed as a whole without touching
any other process. Output goes to a log file that the sizing tests parse."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine_env import SCRIPTS, base_env, engine_venv

# Budget for one server to become healthy. Seen: 50-140 s on 2 shared cores (imports of three
# processes dominate; the first start of a model shape adds an inductor compile).
STARTUP_TIMEOUT_S = float(os.environ.get("VLLM_EKS_ENGINE_STARTUP_TIMEOUT", "420"))
# The engine's own sizing line (vllm/v1/core/kv_cache_utils.py update_kv_cache_capacity).
SIZING_LINE = re.compile(
    r"(?P<device>\w+(?: \+ host)?) KV cache size: (?P<tokens>[\d,]+) tokens, "
    r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<conc>[\d.]+)x")


def http_text(url: str, body: Any = None, timeout: float = 60, method: str | None = None) -> tuple[int, str]:
    """(status, body text) of a request to `url`: POST with a JSON body when one is given, GET
    otherwise; an HTTP error status is returned, not raised."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method or ("POST" if data else "GET"),
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerFailed(AssertionError):
    pass


@dataclass(frozen=True)
class Sizing:
    tokens: int
    max_model_len: int
    max_concurrency: str  # as logged, two decimals

    @classmethod
    def parse(cls, text: str) -> "Sizing | None":
        m = SIZING_LINE.search(text)
        if not m:
            return None
        return cls(int(m["tokens"].replace(",", "")), int(m["len"].replace(",", "")), m["conc"])


@dataclass
class VllmServer:
    """One `vllm serve` process. `args` are the arguments after `vllm serve`."""

    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    healthy_after_s: float | None = None
    exit_code: int | None = None
    notes: list[str] = field(default_factory=list)
    # argv prefix the command runs under (e.g. pod_sandbox.PodSandbox.wrapper); empty: none
    wrapper: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "VllmServer":
        venv = engine_venv()
        env = base_env()
        env.update(self.env)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        cmd = [*self.wrapper, str(venv.python), str(SCRIPTS / "vllm_serve.py"), *self.args]
        log.write(("# " + json.dumps({"cmd": cmd, "env": self.env}) + "\n").encode())
        log.flush()
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        return self

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _fail(self, why: str) -> ServerFailed:
        return ServerFailed(f"server {self.name}: {why}\nargs: {self.args}\nenv: {self.env}\n"
                            f"log {self.log_path} (tail):\n{self.log_tail()}")

    def wait_healthy(self, timeout: float = STARTUP_TIMEOUT_S) -> float:
        """Seconds from start to the first 200 from /health."""
        deadline = self.started_at + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise self._fail(f"exited with {self.proc.returncode if self.proc else None} "
                                 "before becoming healthy")
            try:
                status, _ = self.request("GET", "/health", timeout=2)
                if status == 200:
                    self.healthy_after_s = time.monotonic() - self.started_at
                    return self.healthy_after_s
            except OSError:
                pass
            time.sleep(0.5)
        raise self._fail(f"not healthy within {timeout:.0f} s")

    def sizing(self) -> Sizing:
        found = Sizing.parse(self.log_text())
        if found is None:
            raise self._fail("no 'KV cache size: ... tokens, Maximum concurrency ...' line logged")
        return found

    def request(self, method: str, path: str, body: Any = None,
                timeout: float = 60, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        sent = {"Content-Type": "application/json"} if data else {}
        sent.update(headers or {})
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        text = raw.decode(errors="replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def signal(self, sig: int) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(sig)

    def wait_exit(self, timeout: float) -> int | None:
        if self.proc is None:
            return None
        try:
            self.exit_code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.exit_code

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM, then SIGKILL of the server's own process group if it lingers."""
        if self.proc is None:
            return
        pgid = self.proc.pid  # start_new_session: the group id is the leader's pid
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            if self.wait_exit(grace) is None:
                self.notes.append(f"did not exit {grace:.0f} s after SIGTERM; killed")
        try:
            os.killpg(pgid, signal.SIGKILL)  # stragglers of this server only
        except ProcessLookupError:
            pass
        self.wait_exit(10)

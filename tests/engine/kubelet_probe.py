"""A rendered probe run the way the kubelet runs it, against a local server: httpGet probes as a
GET with timeoutSeconds (success is 200-399), exec probes as the rendered command killed at
timeoutSeconds (success is exit 0), each repeated every periodSeconds, the container failing its
probe after failureThreshold consecutive failures. The chart's scripts mount maps to the chart's
files/ directory and `python3` to this interpreter (the scripts use the standard library only);
the rendered port becomes the local server's."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import scenarios as sc

SCRIPTS_MOUNT = "/opt/vllm-eks/scripts"


@dataclass
class Attempt:
    started: float
    ok: bool
    seconds: float
    detail: str = ""


def exec_argv(command: list[str], port: int) -> list[str]:
    """The rendered exec command as it runs here."""
    argv = [sys.executable if a == "python3" else a for a in command]
    argv = [a.replace(SCRIPTS_MOUNT, str(Path(sc.CHART_VLLM) / "files" / "probes")) for a in argv]
    if "--port" in argv:
        argv[argv.index("--port") + 1] = str(port)
    return argv


def run_once(probe: dict[str, Any], port: int, env: dict[str, str] | None = None) -> Attempt:
    timeout = int(probe.get("timeoutSeconds", 1))
    t0 = time.monotonic()
    if "httpGet" in probe:
        url = f"http://127.0.0.1:{port}{probe['httpGet']['path']}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                status = resp.status
        except urllib.error.HTTPError as err:
            status = err.code
        except OSError as err:
            return Attempt(t0, False, time.monotonic() - t0, repr(err))
        return Attempt(t0, 200 <= status < 400, time.monotonic() - t0, f"HTTP {status}")
    argv = exec_argv(probe["exec"]["command"], port)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return Attempt(t0, False, time.monotonic() - t0, f"timed out after {timeout} s")
    return Attempt(t0, proc.returncode == 0, time.monotonic() - t0, (proc.stdout + proc.stderr).strip()[-300:])


@dataclass
class Prober:
    """One probe repeated on its period in a thread until stopped."""
    probe: dict[str, Any]
    port: int
    env: dict[str, str] | None = None
    attempts: list[Attempt] = field(default_factory=list)
    failed_at: float | None = None  # when failureThreshold consecutive failures were reached
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Prober:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        period = int(self.probe.get("periodSeconds", 10))
        threshold = int(self.probe.get("failureThreshold", 3))
        consecutive = 0
        while not self._stop.is_set():
            attempt = run_once(self.probe, self.port, self.env)
            self.attempts.append(attempt)
            consecutive = 0 if attempt.ok else consecutive + 1
            if consecutive >= threshold and self.failed_at is None:
                self.failed_at = time.monotonic()
            self._stop.wait(max(0.0, attempt.started + period - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)

    def failures(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.ok]

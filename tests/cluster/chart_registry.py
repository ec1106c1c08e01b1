"""A local OCI registry holding the chart packages, for the tests that install the way a release
is consumed (`helm install NAME oci://…/<chart> --version V`).

The registry is go-containerregistry's in-memory one (`make oci-registry`), on a loopback port
without TLS; the packages are the ones `make package` builds, pushed by the release's own step
(tools/push_charts.py --plain-http)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.cluster.scenarios import packages
from tests.harness.helm import HELM_VERSIONS
from tests.harness.tools import require_tool
from tools import push_charts

REPOSITORY = "charts"


@dataclass
class ChartRegistry:
    proc: subprocess.Popen
    port: int
    pushed: dict[str, str]            # chart -> "<ref> <digest>"

    @property
    def url(self) -> str:
        return f"oci://127.0.0.1:{self.port}/{REPOSITORY}"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(log: Path) -> ChartRegistry:
    binary = Path(os.environ.get("VLLM_EKS_OCI_REGISTRY") or require_tool("oci-registry"))
    port = _free_port()
    proc = subprocess.Popen([str(binary), "-port", str(port)], stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"oci-registry did not answer on :{port}: {log.read_text()[-2000:]}")
            time.sleep(0.2)
    registry = ChartRegistry(proc, port, {})
    for chart, package in packages().items():
        ref, digest = push_charts.push(HELM_VERSIONS["helm4"], package, registry.url, plain_http=True)
        registry.pushed[chart] = f"{ref} {digest}"
    return registry

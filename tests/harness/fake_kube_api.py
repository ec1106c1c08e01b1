"""A small HTTPS stand-in for the parts of the Kubernetes API the multi-node diagnostics runner
(charts/vllm-inference/files/diagnostics/run_groups.py) uses: listing pods by label selector and
pods/exec over WebSocket (RFC 6455 handshake, binary messages prefixed with the channel byte,
the final metav1.Status on channel 3, as kube-apiserver's v4/v5.channel.k8s.io streams do).

Each exec is recorded; its output and exit code come from `outcomes` (pod name -> exit code).
"""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import struct
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11C5B"
LWS = "leaderworkerset.sigs.k8s.io"


def lws_pods(name: str, namespace: str, groups: int, group_size: int, ready: bool = True) -> list[dict[str, Any]]:
    """Pods as the LWS controller names and labels them: <lws>-<g> leader, <lws>-<g>-<w> workers."""
    pods = []
    for g in range(groups):
        for w in range(group_size):
            pods.append({
                "metadata": {"name": f"{name}-{g}" if w == 0 else f"{name}-{g}-{w}", "namespace": namespace,
                             "labels": {f"{LWS}/name": name, f"{LWS}/group-index": str(g),
                                        f"{LWS}/worker-index": str(w)}},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
            })
    return pods


def _frame(payload: bytes, opcode: int = 0x2) -> bytes:
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


@dataclass
class FakeKubeApi:
    workdir: Path
    token: str = "fake-token"
    pods: list[dict[str, Any]] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    execs: list[tuple[str, str, list[str]]] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)

    def start(self) -> FakeKubeApi:
        self.workdir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key",
                        "-out", "ca.crt", "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], cwd=self.workdir, check=True, capture_output=True)
        (self.workdir / "token").write_text(self.token)
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.headers.get("Authorization") != f"Bearer {api.token}":
                    return self._send(401, {"kind": "Status", "status": "Failure", "reason": "Unauthorized"})
                url = urllib.parse.urlsplit(self.path)
                parts = url.path.strip("/").split("/")
                query = urllib.parse.parse_qs(url.query)
                # /api/v1/namespaces/<ns>/pods[/<name>/exec]
                if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5 and parts[4] == "pods":
                    return self._list(parts[3], (query.get("labelSelector") or [""])[0])
                if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 7 and parts[6] == "exec":
                    return self._exec(parts[3], parts[5], query)
                self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound"})

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _list(self, ns: str, selector: str) -> None:
                api.lists.append(selector)
                want = dict(kv.split("=", 1) for kv in selector.split(",") if kv)
                items = [p for p in api.pods if p["metadata"]["namespace"] == ns
                         and want.items() <= p["metadata"]["labels"].items()]
                self._send(200, {"kind": "PodList", "apiVersion": "v1", "items": items})

            def _exec(self, ns: str, pod: str, query: dict[str, list[str]]) -> None:
                if not any(p["metadata"]["name"] == pod and p["metadata"]["namespace"] == ns for p in api.pods):
                    return self._send(404, {"kind": "Status", "status": "Failure", "reason": "NotFound",
                                            "message": f'pods "{pod}" not found'})
                if self.headers.get("Upgrade", "").lower() != "websocket":
                    return self._send(400, {"kind": "Status", "status": "Failure", "message": "upgrade required"})
                offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",")]
                proto = next(p for p in ("v5.channel.k8s.io", "v4.channel.k8s.io") if p in offered)
                accept = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] + _WS_GUID).encode()).digest())
                self.send_response(101)
                self.send_header("Upgrade", "websocket")
                self.send_header("Connection", "Upgrade")
                self.send_header("Sec-WebSocket-Accept", accept.decode())
                self.send_header("Sec-WebSocket-Protocol", proto)
                self.end_headers()
                command = query.get("command") or []
                api.execs.append((pod, (query.get("container") or [""])[0], command))
                code = api.outcomes.get(pod, 0)
                self.wfile.write(_frame(b"\x01" + f"ran {' '.join(command)} in {pod}\n".encode()))
                status = {"metadata": {}, "status": "Success"} if code == 0 else {
                    "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                    "message": f"command terminated with non-zero exit code: exit status {code}",
                    "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
                self.wfile.write(_frame(b"\x03" + json.dumps(status).encode()))
                self.wfile.write(_frame(struct.pack("!H", 1000), opcode=0x8))
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.workdir / "ca.crt", self.workdir / "tls.key")
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def pod_env(self) -> dict[str, str]:
        """What a pod with this ServiceAccount sees: the API address and the token/CA directory."""
        return {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(self.port),
                "SA_DIR": str(self.workdir)}

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

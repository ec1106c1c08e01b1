#!/usr/bin/env python3
"""Run one diagnostics check in every pod of every live LeaderWorkerSet group (helm test).

The groups are found when the test runs, by label selector through the Kubernetes API, not from
the chart's planned replica count: with KEDA (or anyone) scaling the LeaderWorkerSet, the live
number of groups differs from `replicas`. The LWS controller labels each pod with
leaderworkerset.sigs.k8s.io/name, group-index and worker-index; a group is complete when it has
--group-size Running, Ready pods with worker indexes 0..size-1.

The check starts in all pods at once (the all-reduce needs every rank of a group) through the
pods/exec subresource over WebSocket (the v5.channel.k8s.io / v4.channel.k8s.io subprotocols
kubectl uses: each binary message starts with its channel byte, 1 stdout, 2 stderr, 3 the final
metav1.Status). Standard library only, so any python3 image runs it.

Credentials: the pod's ServiceAccount (token and CA under SA_DIR, the API at
KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT). Exit 0 when every pod of every group passed,
1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
SUBPROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11C5B"  # RFC 6455 section 1.3


class DiagnosticsError(RuntimeError):
    pass


@dataclass
class Api:
    host: str
    port: int
    token: str
    ca_file: str
    timeout: float = 900.0

    @classmethod
    def in_cluster(cls, timeout: float) -> Api:
        sa = os.environ.get("SA_DIR", SA_DIR)
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
        if not host or not port:
            raise DiagnosticsError("KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set: run inside a pod")
        try:
            with open(os.path.join(sa, "token")) as f:
                token = f.read().strip()
        except OSError as exc:
            raise DiagnosticsError(f"no ServiceAccount token in {sa}: {exc}") from exc
        return cls(host.strip("[]"), int(port), token, os.path.join(sa, "ca.crt"), timeout)

    def _connect(self) -> ssl.SSLSocket:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        raw = socket.create_connection((self.host, self.port), timeout=self.timeout)
        return ctx.wrap_socket(raw, server_hostname=self.host)

    def _request(self, path: str, headers: dict[str, str]) -> tuple[ssl.SSLSocket, int, dict[str, str], bytes]:
        sock = self._connect()
        lines = [f"GET {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Authorization: Bearer {self.token}",
                 *(f"{k}: {v}" for k, v in headers.items()), "", ""]
        sock.sendall("\r\n".join(lines).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                raise DiagnosticsError(f"GET {path}: connection closed before a response")
            head += chunk
        head, rest = head.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("iso-8859-1").split("\r\n")
        status = int(status_line.split()[1])
        hdrs = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines if ":" in h)}
        return sock, status, hdrs, rest

    def get_json(self, path: str) -> dict:
        sock, status, hdrs, body = self._request(path, {"Accept": "application/json", "Connection": "close"})
        with sock:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                body += chunk
        if hdrs.get("transfer-encoding", "").lower() == "chunked":
            body = _dechunk(body)
        if status != 200:
            raise DiagnosticsError(f"GET {path}: HTTP {status}: {body[:500].decode(errors='replace')}")
        return json.loads(body)

    def exec(self, namespace: str, pod: str, container: str, command: list[str]) -> ExecResult:
        query = urllib.parse.urlencode(
            [("container", container), ("stdout", "true"), ("stderr", "true"), *(("command", c) for c in command)])
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/exec?{query}"
        key = base64.b64encode(os.urandom(16)).decode()
        sock, status, hdrs, rest = self._request(path, {
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": key, "Sec-WebSocket-Protocol": ", ".join(SUBPROTOCOLS)})
        result = ExecResult(pod)
        with sock:
            if status != 101:
                return result.failed(f"exec refused: HTTP {status} {rest[:300].decode(errors='replace')}")
            accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
            if hdrs.get("sec-websocket-accept") != accept:
                return result.failed("exec: bad Sec-WebSocket-Accept from the API server")
            reader = _Frames(sock, rest)
            for payload in reader.messages():
                if not payload:
                    continue
                channel, data = payload[0], payload[1:]
                if channel == 1:
                    result.stdout += data
                elif channel == 2:
                    result.stderr += data
                elif channel == 3:
                    result.status = json.loads(data or b"{}")
        return result


@dataclass
class ExecResult:
    pod: str
    stdout: bytes = b""
    stderr: bytes = b""
    status: dict | None = None
    error: str = ""

    def failed(self, error: str) -> ExecResult:
        self.error = error
        return self

    @property
    def exit_code(self) -> int:
        """0 on Success; the command's exit code from the NonZeroExitCode status; else 1."""
        if self.error or self.status is None:
            return 1
        if self.status.get("status") == "Success":
            return 0
        for cause in (self.status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode" and str(cause.get("message", "")).isdigit():
                return int(cause["message"]) or 1
        return 1

    @property
    def message(self) -> str:
        if self.error:
            return self.error
        if self.status is None:
            return "the exec stream ended without a status"
        return self.status.get("message") or self.status.get("status", "")


class _Frames:
    """RFC 6455 frames from the server (never masked); data messages reassembled."""

    def __init__(self, sock: socket.socket, buffered: bytes) -> None:
        self.sock, self.buf = sock, buffered

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def messages(self):
        message = b""
        while True:
            try:
                b0, b1 = self._read(2)
                length = b1 & 0x7F
                if length == 126:
                    (length,) = struct.unpack("!H", self._read(2))
                elif length == 127:
                    (length,) = struct.unpack("!Q", self._read(8))
                mask = self._read(4) if b1 & 0x80 else b""
                payload = self._read(length)
            except EOFError:
                return
            if mask:
                payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
            opcode = b0 & 0x0F
            if opcode == 0x8:  # close
                return
            if opcode in (0x9, 0xA):  # ping/pong: nothing to answer for a one-way stream
                continue
            message += payload
            if b0 & 0x80:  # FIN
                yield message
                message = b""


def _dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, body = body.split(b"\r\n", 1)
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, body = out + body[:size], body[size + 2:]
    return out


@dataclass
class Group:
    index: str
    pods: dict[int, dict] = field(default_factory=dict)


def _ready(pod: dict) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def live_groups(pods: list[dict], group_size: int) -> tuple[list[Group], list[str]]:
    """The groups of the listed pods (terminating ones left out) and what is wrong with them."""
    groups: dict[str, Group] = {}
    problems = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        labels = meta.get("labels") or {}
        g, w = labels.get(GROUP_LABEL), labels.get(WORKER_LABEL)
        if g is None or w is None or not w.isdigit():
            problems.append(f"pod {meta.get('name')}: no {GROUP_LABEL}/{WORKER_LABEL} labels")
            continue
        groups.setdefault(g, Group(g)).pods[int(w)] = pod
    ordered = sorted(groups.values(), key=lambda x: (len(x.index), x.index))
    for group in ordered:
        if sorted(group.pods) != list(range(group_size)):
            problems.append(f"group {group.index}: worker indexes {sorted(group.pods)}, expected 0..{group_size - 1}")
        not_ready = [p["metadata"]["name"] for p in group.pods.values() if not _ready(p)]
        if not_ready:
            problems.append(f"group {group.index}: pods not Running and Ready: {', '.join(sorted(not_ready))}")
    return ordered, problems


def run(api: Api, namespace: str, name: str, group_size: int, container: str, command: list[str]) -> int:
    selector = f"{NAME_LABEL}={name}"
    listing = api.get_json(f"/api/v1/namespaces/{namespace}/pods?" + urllib.parse.urlencode({"labelSelector": selector}))
    groups, problems = live_groups(listing.get("items") or [], group_size)
    if not groups:
        print(f"FAIL: no pod in namespace {namespace} matches {selector}", flush=True)
        return 1
    print(f"{len(groups)} live group(s) of {name} ({selector}), {group_size} pod(s) each", flush=True)
    if problems:
        for p in problems:
            print(f"FAIL: {p}", flush=True)
        return 1
    targets = [(g.index, w, g.pods[w]["metadata"]["name"]) for g in groups for w in sorted(g.pods)]
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        results = list(pool.map(lambda t: api.exec(namespace, t[2], container, command), targets))
    failed = 0
    for (g, w, pod), r in zip(targets, results, strict=True):
        verdict = "ok" if r.exit_code == 0 else f"FAIL (exit {r.exit_code}: {r.message})"
        print(f"=== group {g} worker {w} pod {pod}: {verdict}", flush=True)
        sys.stdout.write(r.stdout.decode(errors="replace"))
        sys.stdout.write(r.stderr.decode(errors="replace"))
        failed += r.exit_code != 0
    print(f"{len(targets) - failed}/{len(targets)} pod(s) passed", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--name", required=True, help="LeaderWorkerSet name (value of the " + NAME_LABEL + " label)")
    parser.add_argument("--group-size", type=int, required=True, help="pods per group (leader and workers)")
    parser.add_argument("--container", default="vllm")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each exec may take")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the check to run in every pod")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("the check command is missing after --")
    if args.group_size < 1:
        parser.error(f"--group-size must be >= 1 (got {args.group_size})")
    try:
        return run(Api.in_cluster(args.timeout), args.namespace, args.name, args.group_size, args.container, command)
    except (DiagnosticsError, OSError, ValueError) as exc:
        print(f"FAIL: {exc}", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""A local stand-in of the Hugging Face Hub for the staging script: only the two routes it calls
through huggingface_hub 2.4 (hf_api.py model_info with files_metadata=True, then one GET per
file on the resolve URL hf_hub_url builds), on a loopback port given as HF_ENDPOINT.

- GET /api/models/<repo>/revision/<rev>?blobs=true: the repo's sha and siblings with size and,
  for LFS files, lfs.sha256/size/pointerSize (the keys ModelInfo parses).
- GET /<repo>/resolve/<sha>/<file>: the bytes, honouring `Range: bytes=N-` with 206 and
  Content-Range, ETag and X-Repo-Commit headers like the Hub's.

Every request must carry `Authorization: Bearer <token>` (the token comes from the Secret in the
chart); bytes sent are counted per file, so a test can tell what a resumed run fetched. Files
larger than `slow_above` are sent in 64 KiB pieces with a pause between, so a copy can be
interrupted part-way."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

PIECE = 64 * 1024


@dataclass
class FakeRepo:
    repo: str
    files: dict[str, bytes]
    lfs: set[str]
    token: str
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    slow_above: int = 1 << 20
    pause_seconds: float = 0.01
    sent: dict[str, int] = field(default_factory=dict)
    ranges: list[tuple[str, int]] = field(default_factory=list)  # (file, first byte) of every GET
    lock: threading.Lock = field(default_factory=threading.Lock)

    def info(self) -> dict:
        siblings = []
        for name, data in self.files.items():
            entry: dict = {"rfilename": name, "size": len(data), "blobId": hashlib.sha1(data).hexdigest()}
            if name in self.lfs:
                entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(entry)
        return {"id": self.repo, "modelId": self.repo, "sha": self.sha, "siblings": siblings, "private": False}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeRepo

    def log_message(self, *args) -> None:  # quiet: the test prints what matters
        pass

    def _reply(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        fake = self.fake
        if self.headers.get("Authorization") != f"Bearer {fake.token}":
            self._reply(401, b'{"error":"Invalid credentials"}', {"X-Error-Code": "RepoNotFound"})
            return
        path = unquote(urlsplit(self.path).path)
        if path in (f"/api/models/{fake.repo}/revision/main", f"/api/models/{fake.repo}/revision/{fake.sha}"):
            self._reply(200, json.dumps(fake.info()).encode(), {"Content-Type": "application/json"})
            return
        m = re.fullmatch(rf"/{re.escape(fake.repo)}/resolve/{fake.sha}/(.+)", path)
        if not m or m.group(1) not in fake.files:
            self._reply(404, b'{"error":"Entry not found"}', {"X-Error-Code": "EntryNotFound"})
            return
        name = m.group(1)
        data = fake.files[name]
        start = 0
        rng = self.headers.get("Range")
        if rng:
            rm = re.fullmatch(r"bytes=(\d+)-", rng)
            if not rm or int(rm.group(1)) >= len(data):
                self._reply(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                return
            start = int(rm.group(1))
        body = data[start:]
        with fake.lock:
            fake.ranges.append((name, start))
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("X-Repo-Commit", fake.sha)
        self.send_header("Accept-Ranges", "bytes")
        if rng:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.end_headers()
        slow = len(data) > fake.slow_above
        try:
            for i in range(0, len(body), PIECE):
                piece = body[i:i + PIECE]
                self.wfile.write(piece)
                with fake.lock:
                    fake.sent[name] = fake.sent.get(name, 0) + len(piece)
                if slow:
                    time.sleep(fake.pause_seconds)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client was killed mid-file: what it got is counted


def serve(fake: FakeRepo) -> tuple[ThreadingHTTPServer, str]:
    """Start the stand-in on a free loopback port; returns the server and its endpoint URL."""
    handler = type("Handler", (_Handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"

"""A local stand-in of the Hugging Face Hub: a real HTTP server on a loopback port, given to the
client as HF_ENDPOINT, answering the routes huggingface_hub 2.4 calls.

- GET /api/models/<repo>[/revision/<rev>]: model_info (hf_api.py) - the commit sha and the
  siblings with size and, for LFS files, lfs.sha256/size/pointerSize (the keys ModelInfo parses).
- GET /api/models/<repo>/tree/<rev>[/<path>][?recursive=True]: list_repo_tree (list_repo_files,
  file_exists of vLLM's repo_utils) - one page of RepoFile / RepoFolder entries (type, path, oid,
  size, lfs.oid/size/pointerSize), the revision and the path each quoted as the client sends them.
- HEAD /<repo>/resolve/<rev>/<file>: what file_download.get_hf_file_metadata reads - ETag,
  X-Repo-Commit, and for LFS files X-Linked-Etag and X-Linked-Size, as the Hub sends them.
- GET /<repo>/resolve/<rev>/<file>: the bytes, honouring `Range: bytes=a-b` and `bytes=a-` with
  206 and Content-Range (parse_safetensors_file_metadata reads the first bytes of each shard,
  then the rest of the header; the staging script resumes a file at the byte it reached).

Failures carry the X-Error-Code huggingface_hub maps to its exceptions (utils/_http.py
hf_raise_for_status): an unknown repo is 401 RepoNotFound without a token (the Hub does not say
whether a repo it hides exists) and 404 with one; an unknown revision 404 RevisionNotFound; a
file the revision lacks 404 EntryNotFound; a gated repo's files 401 GatedRepo without the token
(its model_info stays public, as on the Hub); a repo with `token` set (the staging tests'
private repo) refuses anything else with 401 RepoNotFound.

A repo has one set of files per commit: `files` are those of `sha` (main); `commits` holds the
files of other commits, which `tags` or the commit sha itself name. Bytes sent are counted per
file and per commit, and every GET's first byte recorded, so a test can tell what a client
fetched and from which commit. Files larger than `slow_above` are sent in 64 KiB pieces with a pause between,
so a copy can be interrupted part-way."""

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


@dataclass(frozen=True)
class LazyFile:
    """A file of `size` bytes that starts with `head` and is zeros after it: a safetensors
    checkpoint of any size (its header, then zero-filled tensor data) without holding it."""

    head: bytes
    size: int

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, s: slice) -> bytes:
        start, stop, _ = s.indices(self.size)
        if stop <= start:
            return b""
        out = self.head[start:stop]
        return out + bytes(stop - start - len(out))

    def digest(self, algo: str) -> str:
        return hashlib.new(algo, self.head + str(self.size).encode()).hexdigest()


def _digest(data: bytes | LazyFile, algo: str) -> str:
    return data.digest(algo) if isinstance(data, LazyFile) else hashlib.new(algo, data).hexdigest()


@dataclass
class FakeRepo:
    repo: str
    files: dict[str, bytes | LazyFile]
    lfs: set[str] = field(default_factory=set)
    token: str | None = None        # private: every request needs it
    gated: bool = False             # gated: the files need `token` (or any token when token is None)
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    tags: dict[str, str] = field(default_factory=dict)  # other refs -> commit
    commits: dict[str, dict[str, bytes | LazyFile]] = field(default_factory=dict)  # other commits -> their files
    slow_above: int = 1 << 20
    pause_seconds: float = 0.01
    sent: dict[str, int] = field(default_factory=dict)
    sent_by_commit: dict[str, int] = field(default_factory=dict)  # commit -> bytes of its files sent
    ranges: list[tuple[str, int]] = field(default_factory=list)  # (file, first byte) of every GET
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path) of every request
    lock: threading.Lock = field(default_factory=threading.Lock)

    def commit(self, rev: str) -> str | None:
        refs = {"main": self.sha, self.sha: self.sha, **self.tags, **{c: c for c in self.tags.values()},
                **{c: c for c in self.commits}}
        return refs.get(rev)

    def files_at(self, sha: str) -> dict[str, bytes | LazyFile]:
        return self.files if sha == self.sha else self.commits.get(sha, self.files)

    def info(self, sha: str) -> dict:
        siblings = []
        for name, data in self.files_at(sha).items():
            entry: dict = {"rfilename": name, "size": len(data), "blobId": _digest(data, "sha1")}
            if name in self.lfs:
                entry["lfs"] = {"sha256": _digest(data, "sha256"), "size": len(data), "pointerSize": 134}
            siblings.append(entry)
        return {"id": self.repo, "modelId": self.repo, "sha": sha, "siblings": siblings,
                "private": self.token is not None, "gated": "manual" if self.gated else False}

    def tree(self, sha: str, path: str, recursive: bool) -> list[dict] | None:
        """list_repo_tree's entries below `path` ("" for the root); None if no such folder."""
        files = self.files_at(sha)
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        if prefix and not any(n.startswith(prefix) for n in files):
            return None
        out: list[dict] = []
        folders: set[str] = set()
        for name in sorted(files):
            if not name.startswith(prefix):
                continue
            parts = name[len(prefix):].split("/")
            for depth in range(1, len(parts)):
                folders.add(prefix + "/".join(parts[:depth]))
            if len(parts) > 1 and not recursive:
                continue
            data = files[name]
            entry: dict = {"type": "file", "path": name, "size": len(data), "oid": _digest(data, "sha1")}
            if name in self.lfs:
                entry["lfs"] = {"oid": _digest(data, "sha256"), "size": len(data), "pointerSize": 134}
            out.append(entry)
        for folder in sorted(folders):
            if recursive or "/" not in folder[len(prefix):]:
                out.append({"type": "directory", "path": folder,
                            "oid": hashlib.sha1(folder.encode()).hexdigest()})
        return out


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo]
    down: bool = False  # answer every request with 503, as a Hub outage would


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub

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

    def _error(self, code: int, error_code: str, message: str) -> None:
        self._reply(code, json.dumps({"error": message}).encode(),
                    {"X-Error-Code": error_code, "X-Error-Message": message, "Content-Type": "application/json"})

    def _route(self) -> tuple[FakeRepo, str, str | None] | None:
        """(repo, kind, rest) of the request path; kind is "api", "tree" (rest: revision NUL path)
        or "resolve"."""
        raw = urlsplit(self.path).path
        path = unquote(raw)
        tree = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(/[^/]+)?", raw)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/(.+))?", path)
        if tree:  # the revision and the path are each quoted whole (slashes as %2F)
            repo, kind = unquote(tree.group(1)), "tree"
            rest = unquote(tree.group(2)) + "\0" + unquote((tree.group(3) or "/")[1:])
        elif m:
            repo, rest = m.group(1), m.group(2) or "main"
            kind = "api"
        else:
            m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/(.+)", path)
            if not m:
                self._error(404, "EntryNotFound", f"no route {path}")
                return None
            repo, rest, kind = m.group(1), m.group(2), "resolve"
        fake = self.hub.repos.get(repo)
        auth = self.headers.get("Authorization")
        if fake is None:
            self._error(404 if auth else 401, "RepoNotFound", "Repository not found")
            return None
        with fake.lock:
            fake.requests.append((self.command, path))
        if fake.token is not None and not fake.gated and auth != f"Bearer {fake.token}":
            self._error(401, "RepoNotFound", "Invalid credentials")
            return None
        return fake, kind, rest

    def _serve(self) -> None:
        if self.hub.down:
            self._error(503, "ServiceUnavailable", "down")
            return
        route = self._route()
        if route is None:
            return
        fake, kind, rest = route
        if kind == "tree":
            rev, _, folder = rest.partition("\0")
            sha = fake.commit(rev)
            if sha is None:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                return
            query = urlsplit(self.path).query
            entries = fake.tree(sha, folder, recursive=bool(re.search(r"(^|&)recursive=(True|true|1)(&|$)", query)))
            if entries is None:
                self._error(404, "EntryNotFound", f"{folder} does not exist on {rev}")
                return
            self._reply(200, json.dumps(entries).encode(), {"Content-Type": "application/json"})
            return
        if kind == "api":
            sha = fake.commit(rest)
            if sha is None:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {rest}")
                return
            self._reply(200, json.dumps(fake.info(sha)).encode(), {"Content-Type": "application/json"})
            return
        rev, _, name = rest.partition("/")
        sha = fake.commit(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return
        if fake.gated:
            auth = self.headers.get("Authorization")
            if not auth or (fake.token is not None and auth != f"Bearer {fake.token}"):
                self._error(401 if not auth else 403, "GatedRepo",
                            f"Access to model {fake.repo} is restricted. You must have access to it and be "
                            "authenticated to access it.")
                return
        if name not in fake.files_at(sha):
            self._error(404, "EntryNotFound", "Entry not found")
            return
        self._send_file(fake, sha, name)

    def _send_file(self, fake: FakeRepo, sha: str, name: str) -> None:
        data = fake.files_at(sha)[name]
        etag = _digest(data, "sha256") if name in fake.lfs else _digest(data, "sha1")
        headers = {"ETag": f'"{etag}"', "X-Repo-Commit": sha, "Accept-Ranges": "bytes"}
        if name in fake.lfs:
            headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))})
        if self.command == "HEAD":
            self.send_response(200)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return
        start, end = 0, len(data) - 1
        rng = self.headers.get("Range")
        if rng:
            rm = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if not rm or int(rm.group(1)) >= len(data):
                self._reply(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                return
            start = int(rm.group(1))
            if rm.group(2):
                end = min(end, int(rm.group(2)))
        body = data[start:end + 1]
        with fake.lock:
            fake.ranges.append((name, start))
        self.send_response(206 if rng else 200)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if rng:
            self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{len(data)}")
        self.end_headers()
        slow = len(data) > fake.slow_above
        try:
            for i in range(0, len(body), PIECE):
                piece = body[i:i + PIECE]
                self.wfile.write(piece)
                with fake.lock:
                    fake.sent[name] = fake.sent.get(name, 0) + len(piece)
                    fake.sent_by_commit[sha] = fake.sent_by_commit.get(sha, 0) + len(piece)
                if slow:
                    time.sleep(fake.pause_seconds)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client was killed mid-file: what it got is counted

    do_GET = _serve
    do_HEAD = _serve


def serve(fake: FakeRepo | FakeHub | list[FakeRepo]) -> tuple[ThreadingHTTPServer, str]:
    """Start the stand-in on a free loopback port for one repo or several; returns the server and
    its endpoint URL (HF_ENDPOINT). Stop it with server.shutdown()."""
    if isinstance(fake, FakeRepo):
        hub = FakeHub({fake.repo: fake})
    elif isinstance(fake, FakeHub):
        hub = fake
    else:
        hub = FakeHub({r.repo: r for r in fake})
    handler = type("Handler", (_Handler,), {"hub": hub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"

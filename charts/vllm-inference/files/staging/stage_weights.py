"""Copy one Hugging Face repo revision into a directory (a PersistentVolumeClaim) or under an
s3:// prefix, once, resumably, with progress lines in the log. Run by the staging Job
(templates/staging-job.yaml); the engine tier runs this same file against a local stand-in of
the Hub.

Why not `hf download`: huggingface_hub 2.x downloads each file to a temporary name unique to the
process and deletes it on failure (file_download.py, _download_to_tmp_and_move), so an
interrupted copy of a 10 GB shard starts again from byte 0. Here huggingface_hub lists the repo
(HfApi.model_info with file sizes and LFS hashes), builds the URLs and the auth headers (HF_TOKEN
or HF_TOKEN_PATH) and gives the HTTP client; the ranged download and its resume are this file's.

Resume: a file is fetched into <state>/partial/<name>.<blob>.part (<blob>: the start of its LFS
sha256 or git blob id, so a part of another revision is never continued) and renamed into place
only once its size (and, for LFS files, sha256) is right, with a record of its blob id beside it;
a file at its final name with the right size and blob record is complete and skipped; a .part
left by an interrupted run is continued with an HTTP Range request. For S3, an object whose size
matches (and whose hf-blob metadata, when set, names the same blob) is skipped; a file is fetched
to the scratch directory, then uploaded.
When every file is in place, the marker <dest>/.vllm-eks-staged (JSON: repo, revision, commit)
is written last: the servers' init container waits for it. A run that fails writes
<dest>/.vllm-eks-staging-failed (JSON: message, exit code, final) and the next run removes it:
the init container stops waiting on a final failure (exit 78: the values or the image cannot work,
and the Job's podFailurePolicy fails the Job at once) and names it, and shows any other while it
waits for the Job's retry.

Environment: STAGE_REPO, STAGE_REVISION, STAGE_TARGET (pvc|s3), STAGE_DIR (pvc), STAGE_S3_URI
(s3), STAGE_SCRATCH (s3: where files wait for upload), STAGE_WORKERS, STAGE_PROGRESS_SECONDS;
HF_ENDPOINT, HF_TOKEN / HF_TOKEN_PATH as huggingface_hub reads them."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

MARKER = ".vllm-eks-staged"
FAILURE = ".vllm-eks-staging-failed"
STATE_DIR = ".vllm-eks-staging"
CHUNK = 1 << 20
ATTEMPTS = 4
EXIT_CONFIG = 78  # EX_CONFIG: the image or the values cannot work; a retry would not help


class Failed(SystemExit):
    """A run that stops with one FAIL line; main records it where the servers wait."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(code)
        self.message = message


def fail(message: str, code: int = 1) -> None:
    print(f"FAIL: {message}", flush=True)
    raise Failed(message, code)


def failure_record(e: Failed) -> dict:
    return {"message": e.message, "exit_code": e.code, "final": e.code == EXIT_CONFIG}


def record_failure(target: PvcTarget | S3Target, e: Failed) -> None:
    try:
        target.write_marker(failure_record(e), FAILURE)
    except Exception as why:  # the record is a courtesy to the servers; the exit code is the result
        print(f"could not record the failure for the servers: {why}", flush=True)


def stop_on_sigterm(target: PvcTarget | S3Target) -> None:
    """SIGTERM (the Job's activeDeadlineSeconds, a deleted pod, a drained node; the Job may
    retry): record it and exit at once, leaving the partial files for the next run to resume
    (waiting for the download threads could outlast the pod's grace period)."""
    def handler(signum: int, frame: object) -> None:
        message = "stopped by SIGTERM (staging.activeDeadlineSeconds reached, or the pod was deleted or its node drained)"
        print(f"FAIL: {message}", flush=True)
        record_failure(target, Failed(message, 143))
        os._exit(143)
    signal.signal(signal.SIGTERM, handler)


def check_image(target: str) -> None:
    """One line naming what the image lacks, before any work."""
    missing = []
    try:
        import huggingface_hub  # noqa: F401
        from huggingface_hub import HfApi, get_session, hf_hub_url  # noqa: F401
        from huggingface_hub.utils import build_hf_headers  # noqa: F401
    except ImportError as e:
        missing.append(f"huggingface_hub with HfApi/get_session/build_hf_headers ({e})")
    if target == "s3":
        try:
            import boto3  # noqa: F401
        except ImportError:
            missing.append("boto3 (target s3 uploads with it)")
    if missing:
        fail(f"the staging image ({os.environ.get('CONTRACT_IMAGE', 'unknown')}) lacks {'; '.join(missing)}: "
             "set staging.image to an image with python3, huggingface_hub and (target s3) boto3", EXIT_CONFIG)


@dataclass(frozen=True)
class RepoFile:
    name: str
    size: int
    sha256: str | None
    blob: str  # LFS sha256, else the git blob id: what identifies this revision's content

    def part_name(self) -> str:
        return f"{self.name}.{self.blob[:16]}.part"


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


class Progress:
    """Byte and file counters shared by the workers; a thread prints one line every period."""

    def __init__(self, files: int, total: int, period: float) -> None:
        self.files, self.total, self.period = files, total, period
        self.done_files = self.done_bytes = self.fetched = self.skipped = self.resumed = 0
        self.lock = threading.Lock()
        self.start = time.monotonic()
        self.stop = threading.Event()

    def add(self, fetched: int = 0, done: int = 0) -> None:
        with self.lock:
            self.fetched += fetched
            self.done_bytes += done + fetched

    def file_done(self, skipped: bool = False) -> None:
        with self.lock:
            self.done_files += 1
            self.skipped += skipped

    def line(self, prefix: str = "progress") -> str:
        with self.lock:
            elapsed = max(time.monotonic() - self.start, 1e-6)
            rate = self.fetched / elapsed
            left = max(self.total - self.done_bytes, 0)
            eta = f"{left / rate:.0f} s" if rate > 0 else "-"
            pct = 100.0 * self.done_bytes / self.total if self.total else 100.0
            return (f"{prefix}: files {self.done_files}/{self.files}, {human(self.done_bytes)} / {human(self.total)} "
                    f"({pct:.1f}%), fetched {human(self.fetched)} this run at {human(rate)}/s, eta {eta}")

    def run(self) -> None:
        while not self.stop.wait(self.period):
            print(self.line(), flush=True)


def list_repo(repo: str, revision: str) -> tuple[str, list[RepoFile]]:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
    try:
        info = HfApi().model_info(repo, revision=revision, files_metadata=True)
    except GatedRepoError:
        fail(f"{repo} is gated: the token (staging.tokenSecret / model.huggingface.tokenSecret) must belong to an "
             "account that accepted its terms", EXIT_CONFIG)
    except RevisionNotFoundError:
        fail(f"{repo} has no revision {revision!r} (staging.revision)", EXIT_CONFIG)
    except RepositoryNotFoundError:
        fail(f"{repo} not found, or private without a valid token (staging.repo, the token Secret)", EXIT_CONFIG)
    files = []
    for s in info.siblings or []:
        # the Hub lists a blob id for every file with files_metadata; hashing name and size stands in otherwise
        blob = (s.lfs.sha256 if s.lfs else s.blob_id) or hashlib.sha1(f"{s.rfilename}:{s.size}".encode()).hexdigest()
        files.append(RepoFile(s.rfilename, int(s.size or 0), s.lfs.sha256 if s.lfs else None, blob))
    if not files:
        fail(f"{repo}@{revision} lists no files", EXIT_CONFIG)
    return str(info.sha), files


def fetch(repo: str, commit: str, f: RepoFile, part: Path, progress: Progress) -> None:
    """Fetch f into part, continuing what part already holds; raise on any mismatch."""
    from huggingface_hub import get_session, hf_hub_url
    from huggingface_hub.utils import build_hf_headers, hf_raise_for_status
    part.parent.mkdir(parents=True, exist_ok=True)
    part.touch(exist_ok=True)  # an empty file has nothing to fetch but is still staged
    have = part.stat().st_size
    if have > f.size:
        part.unlink()
        have = 0
    if 0 < have:
        with progress.lock:
            progress.resumed += 1
        progress.add(done=have)
        print(f"resume: {f.name} from byte {have} of {f.size}", flush=True)
    if have < f.size:
        headers = build_hf_headers()
        headers["Range"] = f"bytes={have}-"
        # The commit, not the branch: every file of one run comes from one revision.
        url = hf_hub_url(repo, f.name, revision=commit)
        with get_session().stream("GET", url, headers=headers, follow_redirects=True, timeout=60) as r:
            if r.status_code >= 400:
                r.read()  # hf_raise_for_status reads the error body
                hf_raise_for_status(r)
            mode = "ab"
            if r.status_code == 200 and have:  # the server ignored the range: start over
                progress.add(done=-have)
                have, mode = 0, "wb"
            with part.open(mode) as out:
                for chunk in r.iter_bytes(CHUNK):
                    out.write(chunk)
                    progress.add(fetched=len(chunk))
    size = part.stat().st_size
    if size != f.size:
        raise OSError(f"{f.name}: got {size} bytes, the repo lists {f.size}")
    if f.sha256:
        digest = hashlib.sha256()
        with part.open("rb") as src:
            for chunk in iter(lambda: src.read(CHUNK), b""):
                digest.update(chunk)
        if digest.hexdigest() != f.sha256:
            part.unlink()
            raise OSError(f"{f.name}: sha256 {digest.hexdigest()} is not the repo's {f.sha256}; the partial file is removed")


def with_retries(what: str, fn) -> None:
    for attempt in range(1, ATTEMPTS + 1):
        try:
            fn()
            return
        except Exception as e:  # network and disk errors alike: retried, then reported in one line
            if attempt == ATTEMPTS:
                raise RuntimeError(f"{what}: {type(e).__name__}: {e}") from e
            print(f"retry {attempt}/{ATTEMPTS - 1}: {what}: {type(e).__name__}: {e}", flush=True)
            time.sleep(min(30, 2 ** attempt))


class PvcTarget:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / STATE_DIR

    def _record(self, f: RepoFile) -> Path:
        return self.state / "done" / (f.name + ".blob")

    def present(self, f: RepoFile) -> bool:
        path, record = self.root / f.name, self._record(f)
        return (path.is_file() and path.stat().st_size == f.size and record.is_file()
                and record.read_text() == f.blob)

    def copy(self, repo: str, commit: str, f: RepoFile, progress: Progress) -> None:
        part = self.state / "partial" / f.part_name()
        fetch(repo, commit, f, part, progress)
        dest, record = self.root / f.name, self._record(f)
        dest.parent.mkdir(parents=True, exist_ok=True)
        record.parent.mkdir(parents=True, exist_ok=True)
        record.unlink(missing_ok=True)  # no record names a file while it is being replaced
        os.replace(part, dest)
        record.write_text(f.blob)
        other = re.compile(re.escape(Path(f.name).name) + r"\.[0-9a-f]{16}\.part")
        for stale in part.parent.iterdir():  # parts of this file from other revisions
            if other.fullmatch(stale.name):
                stale.unlink(missing_ok=True)

    def marker(self) -> dict | None:
        path = self.root / MARKER
        return json.loads(path.read_text()) if path.is_file() else None

    def write_marker(self, record: dict, name: str = MARKER) -> None:
        tmp = self.root / (name + ".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, self.root / name)

    def clear_failure(self) -> None:
        (self.root / FAILURE).unlink(missing_ok=True)


class S3Target:
    def __init__(self, uri: str, scratch: Path) -> None:
        import boto3
        from boto3.s3.transfer import TransferConfig
        if not uri.startswith("s3://") or len(uri) <= 5:
            fail(f"staging.s3Uri {uri!r} is not an s3://bucket/prefix URI", EXIT_CONFIG)
        self.bucket, _, prefix = uri[5:].partition("/")
        self.prefix = prefix.strip("/")
        self.s3 = boto3.client("s3")
        # 64 MiB parts: a 5 GB shard is 80 parts, well inside S3's 10,000-part limit.
        self.config = TransferConfig(multipart_chunksize=64 << 20)
        self.scratch = scratch

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def _head(self, key: str) -> dict | None:
        from botocore.exceptions import ClientError
        try:
            return self.s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    def present(self, f: RepoFile) -> bool:
        head = self._head(self.key(f.name))
        if head is None or int(head["ContentLength"]) != f.size:
            return False
        blob = head.get("Metadata", {}).get("hf-blob")
        return blob is None or blob == f.blob  # an object uploaded by other means: its size decides

    def copy(self, repo: str, commit: str, f: RepoFile, progress: Progress) -> None:
        part = self.scratch / "partial" / f.part_name()
        fetch(repo, commit, f, part, progress)
        self.s3.upload_file(str(part), self.bucket, self.key(f.name), Config=self.config,
                            ExtraArgs={"Metadata": {"hf-blob": f.blob}})
        part.unlink()

    def marker(self) -> dict | None:
        if self._head(self.key(MARKER)) is None:
            return None
        body = self.s3.get_object(Bucket=self.bucket, Key=self.key(MARKER))["Body"].read()
        return json.loads(body)

    def write_marker(self, record: dict, name: str = MARKER) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=self.key(name), Body=json.dumps(record, indent=1).encode())

    def clear_failure(self) -> None:
        self.s3.delete_object(Bucket=self.bucket, Key=self.key(FAILURE))


def main() -> None:
    env = os.environ.get
    target_kind = env("STAGE_TARGET", "")
    if target_kind not in ("pvc", "s3"):
        fail(f"STAGE_TARGET {target_kind!r}: pvc or s3 (staging.target)", EXIT_CONFIG)
    repo, revision = env("STAGE_REPO", ""), env("STAGE_REVISION", "main")
    if not repo:
        fail("STAGE_REPO is empty (staging.repo)", EXIT_CONFIG)
    check_image(target_kind)
    if target_kind == "pvc":
        root = Path(env("STAGE_DIR", ""))
        if not root.is_absolute():
            fail(f"STAGE_DIR {str(root)!r} must be an absolute path (the claim's mount)", EXIT_CONFIG)
        root.mkdir(parents=True, exist_ok=True)
        target: PvcTarget | S3Target = PvcTarget(root)
        where = str(root)
    else:
        target = S3Target(env("STAGE_S3_URI", ""), Path(env("STAGE_SCRATCH", "/tmp/staging")))
        where = env("STAGE_S3_URI", "")
    target.clear_failure()
    stop_on_sigterm(target)
    try:
        stage(target, repo, revision, where)
    except Failed as e:
        record_failure(target, e)
        raise


def stage(target: PvcTarget | S3Target, repo: str, revision: str, where: str) -> None:
    env = os.environ.get
    commit, files = list_repo(repo, revision)
    total = sum(f.size for f in files)
    print(f"staging {repo}@{revision} (commit {commit}): {len(files)} files, {human(total)} -> {where}", flush=True)
    staged = target.marker()
    if staged and staged.get("commit") == commit and all(target.present(f) for f in files):
        print(f"done: already staged (marker {MARKER} names commit {commit}); nothing fetched", flush=True)
        return
    progress = Progress(len(files), total, float(env("STAGE_PROGRESS_SECONDS", "10")))
    todo = []
    for f in files:
        if target.present(f):
            progress.add(done=f.size)
            progress.file_done(skipped=True)
        else:
            todo.append(f)
    print(f"{len(files) - len(todo)} files already present, {len(todo)} to fetch", flush=True)
    ticker = threading.Thread(target=progress.run, daemon=True)
    ticker.start()
    errors: list[str] = []

    def one(f: RepoFile) -> None:
        try:
            with_retries(f.name, lambda: target.copy(repo, commit, f, progress))
            progress.file_done()
        except RuntimeError as e:
            errors.append(str(e))

    with ThreadPoolExecutor(max_workers=max(1, int(env("STAGE_WORKERS", "4")))) as pool:
        list(pool.map(one, todo))
    progress.stop.set()
    if errors:
        print(progress.line("stopped"), flush=True)
        fail(f"{len(errors)} of {len(files)} files not staged (a rerun resumes them): {errors[0]}")
    target.write_marker({"repo": repo, "revision": revision, "commit": commit, "files": len(files), "bytes": total})
    print(progress.line("done") + f", {progress.skipped} skipped as present, {progress.resumed} resumed; "
          f"marker {MARKER} written", flush=True)


if __name__ == "__main__":
    main()

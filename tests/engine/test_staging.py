"""The staging Job as the chart renders it (charts/vllm-inference staging.*): its container's command
and env, with files/staging/stage_weights.py taken from the rendered scripts ConfigMap, run by the
engine venv's python and huggingface_hub (the vLLM image's stand-ins, tests/engine/staging_pod.py)
against a local stand-in of the Hub (tests/harness/fake_hub.py) that requires the token.

Target pvc (a folder standing in for the claim): the first run is killed (SIGKILL, as a node loss
or the deadline would) while the large file is part-way; the second run skips the finished files,
continues the large one with a Range request from the byte the first run reached (the stand-in
sends only the rest), ends with the repo's sha256 for every file and writes the marker; a third
run fetches nothing; a new revision that changed one file without changing its size fetches that
file only. Progress lines appear in the log. The servers' wait init container, run as
rendered: still waiting before the marker exists, done after.

Target s3, against moto's S3 server (tools/engine-setup.sh builds it; the engine venv has boto3
because the image has it, through runai-model-streamer[s3]): killed the same way; the second run
starts with an empty scratch folder as a new pod of the Job would (a new emptyDir), skips the
objects already uploaded with the right size, uploads the rest; every object has the repo's
sha256, the marker object is written last, and the servers' S3 wait init container finds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.engine import staging_pod as sp
from tests.engine.engine_env import EngineVenv, base_env, s3_standin_server
from tests.engine.report import REPORT
from tests.engine.server import free_port
from tests.harness.fake_hub import FakeRepo, serve

REPO = "tiny-org/tiny-model"
TOKEN = "hf_stagingtesttoken"
SECRETS = {("hf-token", "HF_TOKEN"): TOKEN}
BIG = "model-00001-of-00002.safetensors"
MARKER = ".vllm-eks-staged"
PVC_VALUES = {"model.source": "pvc", "model.name": f"/models/{REPO}", "model.pvc.claimName": "weights",
              "staging.enabled": True, "staging.repo": REPO, "staging.pvc.claimName": "weights",
              "staging.tokenSecret.name": "hf-token", "staging.progressSeconds": 1}
BUCKET = "staging-test"
S3_URI = f"s3://{BUCKET}/{REPO}"
S3_VALUES = {"model.source": "s3", "model.name": S3_URI, "staging.enabled": True, "staging.target": "s3",
             "staging.repo": REPO, "staging.s3Uri": S3_URI, "staging.tokenSecret.name": "hf-token",
             "staging.progressSeconds": 1}


def _files() -> dict[str, bytes]:
    big = hashlib.sha256(b"seed").digest() * (6 * 1024 * 1024 // 32)  # 6 MiB
    return {
        "config.json": json.dumps({"architectures": ["TinyForCausalLM"]}).encode(),
        "tokenizer.json": b'{"version": "1.0"}' * 100,
        BIG: big,
        "model-00002-of-00002.safetensors": bytes(range(256)) * 2048,  # 512 KiB, under slow_above
        "sub/dir/notes.txt": b"staged\n",
    }


class Staging:
    """The rendered Job (and the servers' init container) with the pod's paths under tmp."""

    def __init__(self, engine: EngineVenv, tmp: Path, values: dict, endpoint: str, extra_env: dict[str, str]) -> None:
        self.engine, self.tmp = engine, tmp
        pod = sp.render(values)
        self.claim = tmp / "claim"
        self.paths = sp.Paths({"/staging": self.claim, "/models": self.claim, "/tmp": tmp / "emptydir",
                               sp.SCRIPTS_MOUNT: sp.write_scripts(pod["scripts"], tmp / "scripts")})
        self.job, self.init = pod["job"], pod["init"]
        self.env = base_env()
        self.env.update(sp.container_env(self.job, self.paths, SECRETS))
        self.env.update({"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": endpoint, **extra_env})
        self.init_env = {**base_env(), **sp.container_env(self.init, self.paths, SECRETS), **extra_env}

    def start(self, log: Path) -> subprocess.Popen:
        return subprocess.Popen(sp.argv(self.job, self.paths, self.engine.python), env=self.env, stdout=log.open("w"),
                                stderr=subprocess.STDOUT, start_new_session=True)

    def wait_init(self, seconds: float) -> tuple[int | None, str]:
        """Run the init container for at most `seconds`: (exit code or None if still waiting, output)."""
        proc = subprocess.Popen(sp.argv(self.init, self.paths, self.engine.python), env=self.init_env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=seconds)
            return proc.returncode, out
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return None, out


def _kill_part_way(proc: subprocess.Popen, part: Path, size: int, log: Path, sig: int = signal.SIGKILL) -> int:
    """Stop the run with `sig` once `part` holds a third of `size` bytes; returns the bytes it holds."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if part.exists() and part.stat().st_size >= size // 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"the first run ended before it could be interrupted:\n{log.read_text()}"
    os.killpg(proc.pid, sig)
    proc.wait(timeout=30)
    time.sleep(0.5)  # the stand-in's thread for the killed connection stops at its next write
    kept = part.stat().st_size
    assert 0 < kept < size, kept
    return kept


def _progress(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("progress: files ")]


def test_staging_to_a_claim_resumes_after_a_kill(engine: EngineVenv, tmp_path: Path) -> None:
    files = _files()
    fake = FakeRepo(repo=REPO, files=files, lfs={BIG, "model-00002-of-00002.safetensors"}, token=TOKEN,
                    pause_seconds=0.04)
    hub, endpoint = serve(fake)
    st = Staging(engine, tmp_path, PVC_VALUES, endpoint, {})
    dest = st.claim / REPO
    assert st.env["STAGE_DIR"] == str(dest)
    part = dest / ".vllm-eks-staging" / "partial" / f"{BIG}.{hashlib.sha256(files[BIG]).hexdigest()[:16]}.part"
    try:
        log1 = tmp_path / "run1.log"
        kept = _kill_part_way(st.start(log1), part, len(files[BIG]), log1)
        assert not (dest / BIG).exists() and not (dest / MARKER).exists()
        first = dict(fake.sent)
        code, out = st.wait_init(3)
        assert code is None and "waiting for the staging Job" in out, (code, out)

        fake.sent.clear()
        fake.ranges.clear()
        log2 = tmp_path / "run2.log"
        assert st.start(log2).wait(timeout=300) == 0, log2.read_text()
        out2 = log2.read_text()
        second = dict(fake.sent)
        assert f"resume: {BIG} from byte {kept}" in out2, out2
        assert fake.ranges.count((BIG, kept)) == 1 and (BIG, 0) not in fake.ranges, (fake.ranges, kept)
        assert second.get(BIG, 0) == len(files[BIG]) - kept, (second, kept)
        done_before = {n for n in files if n != BIG and first.get(n, 0) == len(files[n])}
        assert not done_before & {n for n, _ in fake.ranges}, (done_before, fake.ranges)
        for name, data in files.items():
            assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest(), name
        assert not part.exists()
        marker = json.loads((dest / MARKER).read_text())
        assert marker["commit"] == fake.sha and marker["files"] == len(files)
        progress = _progress(out2)
        assert progress and f"done: files {len(files)}/{len(files)}" in out2, out2
        code, out = st.wait_init(30)
        assert code == 0 and f'"commit": "{fake.sha}"' in out, (code, out)

        fake.sent.clear()
        log3 = tmp_path / "run3.log"
        assert st.start(log3).wait(timeout=120) == 0, log3.read_text()
        assert "already staged" in log3.read_text() and not fake.sent, (log3.read_text(), fake.sent)

        # a new revision whose tokenizer.json changed but kept its size: only that file is fetched again
        fake.sha = "fedcba9876543210fedcba9876543210fedcba98"
        old = fake.files["tokenizer.json"]
        fake.files = {**fake.files, "tokenizer.json": old.replace(b"1.0", b"2.0")}
        assert len(fake.files["tokenizer.json"]) == len(old) and fake.files["tokenizer.json"] != old
        fake.ranges.clear()
        log5 = tmp_path / "run5.log"
        assert st.start(log5).wait(timeout=120) == 0, log5.read_text()
        assert fake.ranges == [("tokenizer.json", 0)], (fake.ranges, log5.read_text())
        assert (dest / "tokenizer.json").read_bytes() == fake.files["tokenizer.json"]
        assert json.loads((dest / MARKER).read_text())["commit"] == fake.sha

        # a wrong token: one FAIL line, exit 78 (the Job's podFailurePolicy fails the Job at once)
        bad = Staging(engine, tmp_path / "bad", PVC_VALUES, endpoint, {})
        bad.env["HF_TOKEN"] = "hf_wrong"
        log4 = tmp_path / "run4.log"
        assert bad.start(log4).wait(timeout=120) == 78, log4.read_text()
        fails = [line for line in log4.read_text().splitlines() if line.startswith("FAIL: ")]
        assert len(fails) == 1 and "not found, or private without a valid token" in fails[0], log4.read_text()
        # ... which the servers' init container reads: it stops waiting and names it
        code, out = bad.wait_init(20)
        assert code == 1 and "the staging Job failed and will not retry" in out, (code, out)
        assert "not found, or private without a valid token" in out, out

        # SIGTERM (the Job's deadline, a drained node) is recorded as not final: the wait goes on and
        # shows it, and the next run clears it
        term = Staging(engine, tmp_path / "term", PVC_VALUES, endpoint, {})
        log6 = tmp_path / "run6.log"
        term_part = term.claim / REPO / part.relative_to(dest)
        proc6 = term.start(log6)
        _kill_part_way(proc6, term_part, len(files[BIG]), log6, signal.SIGTERM)
        assert proc6.returncode == 143 and "FAIL: stopped by SIGTERM" in log6.read_text(), log6.read_text()
        code, out = term.wait_init(3)
        assert code is None and "whose last run failed" in out and "SIGTERM" in out, (code, out)
        log7 = tmp_path / "run7.log"
        assert term.start(log7).wait(timeout=300) == 0, log7.read_text()
        assert not (term.claim / REPO / ".vllm-eks-staging-failed").exists()
        code, out = term.wait_init(30)
        assert code == 0 and "staged:" in out, (code, out)
    finally:
        hub.shutdown()
    total = sum(len(d) for d in files.values())
    REPORT.note(f"staging (pvc): run 1 killed with {kept} of {len(files[BIG])} bytes of {BIG}; run 2 fetched "
                f"{sum(second.values())} of {total} bytes, {BIG} from byte {kept}; sha256 of all {len(files)} files "
                f"match; run 3 fetched 0; a new revision with a same-size changed file fetched only that file; "
                f"{len(progress)} progress lines, e.g. {progress[-1]!r}; the wait init container waited before the "
                "marker and passed after it, stopped naming a final failure (wrong token, exit 78) and kept waiting, "
                "showing it, after a SIGTERM")


# Lists the bucket with the image's boto3: key -> [size, sha256].
LIST_OBJECTS = """
import hashlib, json, sys, boto3
s3 = boto3.client("s3")
out = {}
for o in s3.list_objects_v2(Bucket=sys.argv[1]).get("Contents", []):
    body = s3.get_object(Bucket=sys.argv[1], Key=o["Key"])["Body"].read()
    out[o["Key"]] = [o["Size"], hashlib.sha256(body).hexdigest()]
print(json.dumps(out))
"""


def _objects(engine: EngineVenv, env: dict[str, str]) -> dict[str, list]:
    out = subprocess.run([str(engine.python), "-c", LIST_OBJECTS, BUCKET], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_staging_to_s3_skips_uploaded_objects(engine: EngineVenv, tmp_path: Path) -> None:
    files = _files()
    fake = FakeRepo(repo=REPO, files=files, lfs={BIG}, token=TOKEN, pause_seconds=0.05)
    hub, endpoint = serve(fake)
    port = free_port()
    moto = subprocess.Popen([str(s3_standin_server()), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=(tmp_path / "moto.log").open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    # What IRSA or Pod Identity would give the pod, pointed at the stand-in.
    aws = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    st = Staging(engine, tmp_path, S3_VALUES, endpoint, aws)
    scratch = Path(st.env["STAGE_SCRATCH"])
    assert st.env["STAGE_S3_URI"] == S3_URI and scratch.is_relative_to(tmp_path / "emptydir")
    make_bucket = f"import boto3; boto3.client('s3').create_bucket(Bucket='{BUCKET}')"
    try:
        deadline = time.monotonic() + 60
        while subprocess.run([str(engine.python), "-c", make_bucket], env=st.env, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline and moto.poll() is None, (tmp_path / "moto.log").read_text()
            time.sleep(0.5)
        log1 = tmp_path / "s3-run1.log"
        kept = _kill_part_way(st.start(log1), scratch / "partial" / f"{BIG}.{hashlib.sha256(files[BIG]).hexdigest()[:16]}.part",
                              len(files[BIG]), log1)
        before = _objects(engine, st.env)
        assert f"{REPO}/{BIG}" not in before and f"{REPO}/{MARKER}" not in before, before
        uploaded = {k.removeprefix(REPO + "/") for k in before}
        assert uploaded, f"no object uploaded before the kill:\n{log1.read_text()}"
        code, out = st.wait_init(5)
        assert code is None and "waiting for the staging Job" in out, (code, out)

        shutil.rmtree(scratch)  # a new pod: a new, empty emptyDir
        fake.ranges.clear()
        log2 = tmp_path / "s3-run2.log"
        assert st.start(log2).wait(timeout=300) == 0, log2.read_text()
        out2 = log2.read_text()
        fetched = {name for name, _ in fake.ranges}
        assert fetched == set(files) - uploaded, (fetched, uploaded)
        assert f"{len(uploaded)} files already present" in out2 and _progress(out2), out2
        after = _objects(engine, st.env)
        for name, data in files.items():
            assert after[f"{REPO}/{name}"] == [len(data), hashlib.sha256(data).hexdigest()], name
        assert f"{REPO}/{MARKER}" in after
        code, out = st.wait_init(60)
        assert code == 0 and f'"commit": "{fake.sha}"' in out, (code, out)

        fake.ranges.clear()
        log3 = tmp_path / "s3-run3.log"
        assert st.start(log3).wait(timeout=120) == 0, log3.read_text()
        assert "already staged" in log3.read_text() and not fake.ranges

        # a final failure (wrong token, exit 78) is an object beside the marker; the S3 waiter stops on it
        other = f"s3://{BUCKET}/other"
        bad = Staging(engine, tmp_path / "bad", {**S3_VALUES, "staging.s3Uri": other, "model.name": other}, endpoint,
                      aws)
        bad.env["HF_TOKEN"] = "hf_wrong"
        log4 = tmp_path / "s3-run4.log"
        assert bad.start(log4).wait(timeout=120) == 78, log4.read_text()
        assert "other/.vllm-eks-staging-failed" in _objects(engine, st.env)
        code, out = bad.wait_init(30)
        assert code == 1 and "the staging Job failed and will not retry" in out, (code, out)
    finally:
        os.killpg(moto.pid, signal.SIGTERM)
        moto.wait(timeout=30)
        hub.shutdown()
    REPORT.note(f"staging (s3, moto): run 1 killed with {kept} bytes of {BIG} in scratch and {len(uploaded)} objects "
                f"uploaded; run 2 (empty scratch) skipped those, fetched {len(fetched)} files; sha256 of all "
                f"{len(files)} objects match; the S3 wait init container waited, then found the marker, and stopped naming a final failure")

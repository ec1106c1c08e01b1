"""The staging Job's script (charts/vllm-inference/files/staging/stage_weights.py) run by the
engine venv's python and huggingface_hub (the vLLM image's stand-ins) against a local stand-in of
the Hub (tests/engine/fake_hub.py), target pvc (a folder standing in for the claim's mount).

First run: killed (SIGKILL, as a node loss or an activeDeadlineSeconds kill would) while the large
file is part-way. Second run: skips the finished files, continues the large one with a Range
request, fetches fewer bytes than the first run's remainder would be from scratch, ends with the
repo's sha256 for every file and writes the marker. Third run: nothing fetched. Progress lines
appear in the log. The token goes as a bearer header (the stand-in refuses requests without it).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.engine.engine_env import EngineVenv, base_env
from tests.engine.fake_hub import FakeRepo, serve
from tests.engine.report import REPORT

SCRIPT = Path(__file__).resolve().parents[2] / "charts/vllm-inference/files/staging/stage_weights.py"
REPO = "tiny-org/tiny-model"
TOKEN = "hf_stagingtesttoken"
BIG = "model-00001-of-00002.safetensors"


def _files() -> dict[str, bytes]:
    big = hashlib.sha256(b"seed").digest() * (6 * 1024 * 1024 // 32)  # 6 MiB
    return {
        "config.json": json.dumps({"architectures": ["TinyForCausalLM"]}).encode(),
        "tokenizer.json": b'{"version": "1.0"}' * 100,
        BIG: big,
        "model-00002-of-00002.safetensors": bytes(range(256)) * 2048,  # 512 KiB, under slow_above
        "sub/dir/notes.txt": b"staged\n",
    }


def _env(endpoint: str, dest: Path, hf_home: Path) -> dict[str, str]:
    env = base_env()
    env.update({"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": endpoint, "HF_TOKEN": TOKEN, "HF_HOME": str(hf_home),
                "STAGE_TARGET": "pvc", "STAGE_REPO": REPO, "STAGE_REVISION": "main", "STAGE_DIR": str(dest),
                "STAGE_WORKERS": "2", "STAGE_PROGRESS_SECONDS": "0.2"})
    return env


def _run(engine: EngineVenv, env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(engine.python), str(SCRIPT)], env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def test_staging_resumes_after_a_kill(engine: EngineVenv, tmp_path: Path) -> None:
    files = _files()
    fake = FakeRepo(repo=REPO, files=files, lfs={BIG, "model-00002-of-00002.safetensors"}, token=TOKEN,
                    pause_seconds=0.02)
    server, endpoint = serve(fake)
    dest, hf_home = tmp_path / "claim" / REPO, tmp_path / "hf"
    env = _env(endpoint, dest, hf_home)
    part = dest / ".vllm-eks-staging" / "partial" / (BIG + ".part")
    try:
        # 1: killed part-way through the large file
        log1 = tmp_path / "run1.log"
        proc = _run(engine, env, log1)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if part.exists() and part.stat().st_size >= len(files[BIG]) // 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the first run ended before it could be interrupted:\n{log1.read_text()}"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        time.sleep(0.5)  # the stand-in's thread for the killed connection stops at its next write
        kept = part.stat().st_size
        assert 0 < kept < len(files[BIG]), kept
        assert not (dest / BIG).exists() and not (dest / ".vllm-eks-staged").exists()
        first = dict(fake.sent)

        # 2: resumes
        fake.sent.clear()
        fake.ranges.clear()
        log2 = tmp_path / "run2.log"
        proc = _run(engine, env, log2)
        assert proc.wait(timeout=300) == 0, log2.read_text()
        out2 = log2.read_text()
        second = dict(fake.sent)
        assert f"resume: {BIG} from byte {kept}" in out2, out2
        assert fake.ranges.count((BIG, kept)) == 1 and (BIG, 0) not in fake.ranges, (fake.ranges, kept)
        assert second.get(BIG, 0) == len(files[BIG]) - kept, (second, kept)
        # files the first run finished are not fetched again
        for name in files:
            if name != BIG and first.get(name, 0) == len(files[name]) and (dest / name).exists():
                assert name not in second, (name, second)
        for name, data in files.items():
            assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest(), name
        assert not part.exists()
        marker = json.loads((dest / ".vllm-eks-staged").read_text())
        assert marker["commit"] == fake.sha and marker["files"] == len(files)
        progress = [line for line in out2.splitlines() if line.startswith("progress: files ")]
        assert progress, out2
        assert "done: files 5/5" in out2, out2

        # 3: already staged, nothing fetched
        fake.sent.clear()
        log3 = tmp_path / "run3.log"
        proc = _run(engine, env, log3)
        assert proc.wait(timeout=120) == 0, log3.read_text()
        assert "already staged" in log3.read_text() and not fake.sent, (log3.read_text(), fake.sent)

        # a wrong token: one FAIL line, exit 78
        bad = dict(env, HF_TOKEN="hf_wrong", STAGE_DIR=str(tmp_path / "other"))
        log4 = tmp_path / "run4.log"
        proc = _run(engine, bad, log4)
        assert proc.wait(timeout=120) == 78, log4.read_text()
        fails = [line for line in log4.read_text().splitlines() if line.startswith("FAIL: ")]
        assert len(fails) == 1 and "not found, or private without a valid token" in fails[0], log4.read_text()
    finally:
        server.shutdown()
    total = sum(len(d) for d in files.values())
    REPORT.note(f"staging (pvc): run 1 killed with {kept} of {len(files[BIG])} bytes of {BIG}; run 2 fetched "
                f"{sum(second.values())} bytes (of {total}), resumed at byte {kept}, sha256 of all {len(files)} files "
                f"match; run 3 fetched 0; {len(progress)} progress lines, e.g. {progress[-1]!r}")

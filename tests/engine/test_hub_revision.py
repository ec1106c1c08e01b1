"""A Hub model pinned at the commit it was sized at, served for real: `vllm-eks values --model
ORG/NAME@<sha>` reads the repo from a local Hugging Face Hub stand-in (tests/harness/fake_hub.py),
the vllm-inference chart renders its Deployment with real Helm, and the server container's
`vllm serve ORG/NAME --revision <sha> ...` runs with the engine tier's CPU substitutions
(tests/engine/cpu.py, the model id kept) and HF_ENDPOINT pointing at the stand-in, so vLLM
downloads the model itself into an empty HF_HOME.

The repo has two commits of the tiny Llama's files (config.json, tokenizer files, chat template,
generation_config.json, model.safetensors): the sized commit, and a newer `main` with 4 layers
instead of 2 (its safetensors holds layers 0-1 again as 2-3), which halves the KV cache tokens
the same budget holds. The server must fetch only the sized commit (every Hub request names it,
no byte of `main` is sent, the snapshot holds exactly its files), serve it (/v1/models, a
completion) and log the KV cache size the generator planned for it, not the one it plans for
`main`.

Substitutions besides cpu.py's (port, host, --kv-cache-memory-bytes -> VLLM_CPU_KVCACHE_SPACE):
HF_ENDPOINT = the stand-in; HF_HOME = an empty temporary folder (the pod's is a path on its
cache volume); HF_HUB_OFFLINE=0 and TRANSFORMERS_OFFLINE=0 (the engine tier's default is
offline). The generator is asked for the CPU's budget (--kv-cache-memory 1, the 1 GiB
VLLM_CPU_KVCACHE_SPACE) and its default block size (--block-size 128), so the rendered list
needs no other change and plan.json's figures are what this engine must log. Runs after the
drain test: the scenario server that 50-60 share is gone by then, so starting this one costs
no restart elsewhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.engine import scenarios as sc
from tests.engine.cpu import Substituted, cpu_substitutions
from tests.engine.engine_plans import vllm_eks
from tests.engine.report import REPORT
from tests.engine.server import VllmServer, free_port
from tests.engine.serving import single_node_invocation
from tests.harness.fake_hub import FakeRepo, serve

REPO = "tiny-org/tiny-llama"
SIZED = "5a1ed0c0ffee5a1ed0c0ffee5a1ed0c0ffee5a1e"  # fixed: vLLM's compile cache is keyed by it
MAIN = "3a1e5f0e3a1e5f0e3a1e5f0e3a1e5f0e3a1e5f0e"
MAIN_LAYERS = 4
INSTANCE = "g6e.xlarge"
KV_GIB = 1
# what the generator is asked for besides the model: the budget and block size this CPU engine has
SIZING_FLAGS = ["--instance", INSTANCE, "--kv-cache-memory", str(KV_GIB), "--block-size", "128"]
WEIGHTS = "model.safetensors"


def _deepened(safetensors: bytes, layers: int) -> bytes:
    """The checkpoint with `layers` decoder layers: the existing ones repeated in order."""
    n = int.from_bytes(safetensors[:8], "little")
    header = json.loads(safetensors[8:8 + n])
    data = safetensors[8 + n:]
    meta = header.pop("__metadata__", None)
    have = 1 + max(int(m.group(1)) for k in header if (m := re.match(r"model\.layers\.(\d+)\.", k)))
    tensors: dict[str, tuple[dict, bytes]] = {}
    for name, t in header.items():
        raw = data[t["data_offsets"][0]:t["data_offsets"][1]]
        m = re.match(r"model\.layers\.(\d+)\.(.+)", name)
        if not m:
            tensors[name] = (t, raw)
            continue
        for i in range(int(m.group(1)), layers, have):
            tensors[f"model.layers.{i}.{m.group(2)}"] = (t, raw)
    out_header: dict[str, Any] = {"__metadata__": meta} if meta is not None else {}
    body = b""
    for name in sorted(tensors):
        t, raw = tensors[name]
        out_header[name] = {"dtype": t["dtype"], "shape": t["shape"], "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    head = json.dumps(out_header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    return len(head).to_bytes(8, "little") + head + body


def _commits(tiny: Path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(files of the sized commit, files of main): the tiny Llama as written, and 4 layers deep."""
    sized = {p.name: p.read_bytes() for p in sorted(tiny.iterdir()) if p.is_file()}
    config = json.loads(sized["config.json"])
    assert config["num_hidden_layers"] != MAIN_LAYERS, config
    main = {**sized, "config.json": json.dumps({**config, "num_hidden_layers": MAIN_LAYERS}, indent=2).encode(),
            WEIGHTS: _deepened(sized[WEIGHTS], MAIN_LAYERS)}
    return sized, main


def _revision(path: str) -> str:
    """The revision a request to the stand-in names ("main" when it names none)."""
    repo = re.escape(REPO)
    m = (re.fullmatch(rf"/api/models/{repo}(?:/(?:revision|tree)/([^/]+)(?:/.*)?)?", path)
         or re.fullmatch(rf"/{repo}/resolve/([^/]+)/.+", path))
    assert m, f"a request the stand-in does not route: {path}"
    return m.group(1) or "main"


def _kind(method: str, path: str) -> str:
    """`GET model_info`, `GET tree`, `HEAD resolve`, `GET resolve`: what a request asked for."""
    route = "tree" if "/tree/" in path else "resolve" if "/resolve/" in path else "model_info"
    return f"{method} {route}"


def _generator(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([vllm_eks(), *args], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"vllm-eks {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc


@dataclass
class HubRun:
    fake: FakeRepo
    sized_files: dict[str, bytes]
    plan: dict[str, Any]
    main_plan: dict[str, Any]
    invocation: sc.ServeInvocation
    sub: Substituted
    server: VllmServer
    hf_home: Path
    requests: list[tuple[str, str]]  # the server's requests to the stand-in
    sent_by_commit: dict[str, int]   # the server's downloads
    generator_sent: dict[str, int]   # what the generator read, per commit


@pytest.fixture(scope="module")
def hub_run(tiny_models, server_pool, tmp_path_factory) -> HubRun:
    tmp = tmp_path_factory.mktemp("hub-revision")
    sized, main = _commits(Path(tiny_models["llama"]["path"]))
    fake = FakeRepo(REPO, files=main, sha=MAIN, commits={SIZED: sized}, lfs={WEIGHTS})
    hub, endpoint = serve(fake)
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
        env.update({"HF_ENDPOINT": endpoint, "VLLM_EKS_HUB_CACHE": str(tmp / "generator-cache")})
        out = tmp / "values"
        _generator(["values", "--model", f"{REPO}@{SIZED}", *SIZING_FLAGS, "--out", str(out)], env)
        plan = json.loads((out / "plan.json").read_text())
        main_plan = json.loads(_generator(["plan", "--model", REPO, *SIZING_FLAGS, "--json"], env).stdout)
        generator_sent = dict(fake.sent_by_commit)
        objects = sc.render_chart(sc.CHART_VLLM, out / "vllm-inference.yaml")
        inv = single_node_invocation("hub-revision", objects)
        assert inv is not None, "the values of a single-node plan rendered no Deployment running vllm serve"
        port = free_port()
        sub = cpu_substitutions(inv.args, tiny_model=tiny_models["llama"]["path"], port=port,
                                kv_cache_gib=KV_GIB, keep_model=True)
        hf_home = tmp / "hf-home"
        server_env = {**sub.env, "HF_ENDPOINT": endpoint, "HF_HOME": str(hf_home),
                      "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}
        fake.requests.clear()
        fake.sent_by_commit.clear()
        srv = server_pool.get(("hub-revision", tuple(sub.args)), "hub-revision", sub.args, server_env, port=port)
        with fake.lock:  # every download ended before /health answered
            requests, sent = list(fake.requests), dict(fake.sent_by_commit)
    finally:
        hub.shutdown()
    return HubRun(fake, sized, plan, main_plan, inv, sub, srv, hf_home, requests, sent, generator_sent)


def test_rendered_command_pins_the_sized_commit(hub_run: HubRun) -> None:
    args = hub_run.invocation.args
    assert args[0] == REPO and sc.flag_value(args, "--revision") == SIZED, args
    assert hub_run.sub.args[0] == REPO and sc.flag_value(hub_run.sub.args, "--revision") == SIZED, hub_run.sub.args
    assert hub_run.plan["model"] == REPO and hub_run.plan["model_revision"] == SIZED, hub_run.plan
    assert hub_run.main_plan["model_revision"] == MAIN, hub_run.main_plan  # main is a newer, other commit
    # the CPU substitutions are the port, the loopback host and the KV budget; the rest runs as rendered
    expected = ("--port ", "listen on 127.0.0.1", "dropped --kv-cache-memory-bytes ", "KV cache budget ")
    other = [c for c in hub_run.sub.changes if not c.startswith(expected)]
    assert not other, other


def test_server_downloads_the_sized_commit_only(hub_run: HubRun) -> None:
    revisions = {}
    for method, path in hub_run.requests:
        revisions.setdefault(_revision(path), []).append(f"{method} {path}")
    assert set(revisions) == {SIZED}, {rev: reqs[:5] for rev, reqs in revisions.items()}
    assert set(hub_run.sent_by_commit) == {SIZED}, hub_run.sent_by_commit
    snapshots = hub_run.hf_home / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots"
    assert sorted(p.name for p in snapshots.iterdir()) == [SIZED]
    got = {p.name: p.read_bytes() for p in (snapshots / SIZED).iterdir()}
    assert sorted(got) == sorted(hub_run.sized_files), (sorted(got), sorted(hub_run.sized_files))
    differ = [name for name, data in got.items() if data != hub_run.sized_files[name]]
    assert not differ, f"snapshot files that are not the sized commit's: {differ}"


def test_served_model_is_the_sized_commit(hub_run: HubRun) -> None:
    status, body = hub_run.server.request("GET", "/v1/models")
    assert status == 200, body
    (served,) = body["data"]
    assert served["id"] == REPO and served["max_model_len"] == hub_run.plan["max_model_len"], served
    status, body = hub_run.server.request("POST", "/v1/completions", {
        "model": REPO, "prompt": "The capital of France is", "max_tokens": 4, "temperature": 0})
    assert status == 200 and body["usage"]["completion_tokens"] >= 1, body


def test_kv_cache_size_is_the_planned_one_for_the_sized_commit(hub_run: HubRun) -> None:
    logged = hub_run.server.sizing()
    plan, main_plan = hub_run.plan, hub_run.main_plan
    matched = (logged.tokens == plan["kv_cache_tokens"] and logged.max_concurrency == f"{plan['max_concurrency']:.2f}"
               and logged.max_model_len == plan["max_model_len"])
    REPORT.sizing_case(
        f"llama from the Hub stand-in at {SIZED[:12]} (vllm-eks values, {INSTANCE}) KV {KV_GIB} GiB, block 128, "
        f"len {logged.max_model_len}: engine {logged.tokens:,} tokens {logged.max_concurrency}x, generator "
        f"{plan['kv_cache_tokens']:,} {plan['max_concurrency']:.2f}x (main, {MAIN_LAYERS} layers: "
        f"{main_plan['kv_cache_tokens']:,})", matched)
    total = sum(len(d) for d in hub_run.sized_files.values())
    REPORT.note(
        f"hub revision: vllm serve {REPO} --revision {SIZED[:12]}… healthy after {hub_run.server.healthy_after_s:.0f} s; "
        f"{len(hub_run.requests)} requests to the stand-in, all at that commit ("
        + ", ".join(f"{n} {k}" for k, n in sorted(Counter(_kind(*r) for r in hub_run.requests).items()))
        + "); fetched "
        f"{hub_run.sent_by_commit.get(SIZED, 0):,} B of it ({len(hub_run.sized_files)} files, {total:,} B) and "
        f"{hub_run.sent_by_commit.get(MAIN, 0):,} B of main; the generator read "
        + ", ".join(f"{n:,} B of {c[:12]}…" for c, n in hub_run.generator_sent.items()))
    assert main_plan["kv_cache_tokens"] != plan["kv_cache_tokens"], (main_plan, plan)  # the line tells them apart
    assert matched, f"engine logged {logged}, the values' plan.json says {plan['kv_cache_tokens']} tokens " \
                    f"{plan['max_concurrency']}x at {plan['max_model_len']}"

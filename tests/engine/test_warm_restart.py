"""Cold and warm start of the same server on a persistent cache volume (docs/caching.md).

The single-node scenario is rendered with `cache.type: pvc` (a chart-created ReadWriteMany claim:
the scenario is autoscaled); its container runs three times in the pod sandbox
(tests/engine/pod_sandbox.py), each time a fresh sandbox with fresh emptyDirs (/tmp, /dev/shm) as
a replaced pod would get: cold on an empty host folder standing in for the claim at the path the
chart mounts it (/var/cache/vllm), warm on the same folder, and a control cold start on a fresh
folder. The rendered env is unchanged, so vLLM writes where VLLM_CACHE_ROOT points. The warm start
must look up the compiled model the cold start saved there, compile no kernel again, and spend
less than 3/4 of either cold start's compilation warm-up; the engine report gives the seconds and
the files reused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.engine.pod_sandbox import PodSandbox
from tests.engine.report import REPORT
from tests.engine.scenarios import CHART_VLLM, VALUES, render_chart
from tests.engine.server import VllmServer
from tests.engine.serving import prepare, sandboxed_server

SCENARIO = "qwen2.5-7b-g6-xlarge"
# The scenario is scaled by KEDA (replicasManagedExternally), so its pods share a ReadWriteMany claim,
# which names a class that can provision one (the chart refuses a created RWX claim without it).
CACHE_VALUES = {"cache.type": "pvc", "cache.pvc.create": True, "cache.pvc.size": "50Gi",
                "cache.pvc.accessMode": "ReadWriteMany", "cache.pvc.storageClassName": "efs-sc"}
# What vLLM 0.32 logs about its compile cache (vllm/compilation/decorators.py). The CPU build runs
# CompilationMode.DYNAMO_TRACE_ONCE with the inductor backend (vllm/platforms/cpu.py) and saves the
# compiled model ahead of time ("saved AOT compiled function to <path>"). A later start looks the
# same path up: "Directly load AOT compilation from path <path>" when it loads, "Compiling model
# again due to a load failure from <path>, reason: ..." when it cannot (seen with vLLM 0.32's CPU
# build: "'function' object has no attribute 'finalize_loading'"); it then compiles again, and
# inductor finds its FX graphs and C++ kernels in TORCHINDUCTOR_CACHE_DIR, on the same volume.
SAVED = re.compile(r"saved AOT compiled function to (\S+)")
LOOKED_UP = re.compile(r"Directly load AOT compilation from path (\S+)|"
                       r"Compiling model again due to a load failure from (\S+), reason: (.*)")
# The model warm-up in which the CPU model runner compiles (vllm/v1/worker/cpu_model_runner.py).
WARMUP = re.compile(r"(\d\d-\d\d \d\d:\d\d:\d\d) \[cpu_model_runner\.py:\d+\] Warming up (model for the compilation|done)")


def _warmup_seconds(log: str) -> float:
    from datetime import datetime
    stamps = [datetime.strptime(m.group(1), "%m-%d %H:%M:%S") for m in WARMUP.finditer(log)]
    assert len(stamps) == 2, f"no model warm-up in the log: {len(stamps)} lines"
    return (stamps[1] - stamps[0]).total_seconds()


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (inode, mtime_ns) of every file under root."""
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_ino, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    return render_chart(CHART_VLLM, VALUES / SCENARIO / "vllm-inference.yaml", set_values=CACHE_VALUES)


def _start(run, container: dict, spec: dict, workdir: Path, claim_dir: Path, claim: str, label: str) -> VllmServer:
    box = PodSandbox.for_container(spec, container, workdir / label, claims={claim: claim_dir})
    _, _, srv = sandboxed_server(run, container, box, f"{label}-{SCENARIO}", workdir / "logs" / f"{label}-{SCENARIO}.log")
    return srv


def test_second_start_reuses_the_persistent_cache(rendered, tiny_models, engine_workdir: Path, server_pool) -> None:
    run = prepare(SCENARIO, rendered, tiny_models)
    spec = run.deployment_pod_spec
    (container,) = [c for c in spec["containers"] if c["name"] == "vllm"]
    (cache_vol,) = [v for v in spec["volumes"] if v["name"] == "cache"]
    claim = cache_vol["persistentVolumeClaim"]["claimName"]
    assert any(o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"] == claim for o in rendered), \
        f"the claim {claim} is not rendered"
    (mount,) = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == "cache"]
    env = {e["name"]: str(e["value"]) for e in container["env"] if "value" in e}
    for var in ("VLLM_CACHE_ROOT", "HF_HOME", "TORCHINDUCTOR_CACHE_DIR", "HOME", "TRITON_CACHE_DIR"):
        assert env[var].startswith(mount + "/"), f"{var}={env[var]} is not on the cache volume {mount}"
    compile_rel = Path(env["VLLM_CACHE_ROOT"]).relative_to(mount) / "torch_compile_cache"

    server_pool.stop_current()  # one server at a time on this machine
    workdir = engine_workdir / "warm-restart"
    claim_dir = workdir / "claim"
    starts: dict[str, float] = {}
    logs: dict[str, str] = {}
    snaps: dict[str, dict[str, tuple[int, int]]] = {}
    # cold and warm share the claim; "control" is a cold start on a fresh claim after them, so a
    # speed-up the machine's own caches (page cache, bytecode) would give shows there too
    for label, folder in (("cold", claim_dir), ("warm", claim_dir), ("control", workdir / "fresh-claim")):
        srv = _start(run, container, spec, workdir, folder, claim, label)
        try:
            srv.start()
            starts[label] = srv.wait_healthy()
            status, body = srv.request("POST", "/v1/completions", {
                "model": srv.request("GET", "/v1/models")[1]["data"][0]["id"],
                "prompt": "The capital of France is", "max_tokens": 4, "temperature": 0})
            assert status == 200, body
        finally:
            srv.stop()
        logs[label] = srv.log_text()
        REPORT.server(srv.name, starts[label])
        snaps[label] = _snapshot(folder)

    cold, warm = snaps["cold"], snaps["warm"]
    compiled = {p for p in cold if p.startswith(str(compile_rel) + "/")}
    assert compiled, f"the cold start wrote nothing under {mount}/{compile_rel}: vLLM compiles elsewhere"
    (saved,) = set(SAVED.findall(logs["cold"])) or {None}
    assert saved and saved.startswith(f"{mount}/{compile_rel}/"), f"the cold start saved its compiled model at {saved}"
    looked = LOOKED_UP.findall(logs["warm"])
    assert looked, "the warm start did not look up the compiled model"
    loaded_from, failed_from, reason = looked[0]
    assert (loaded_from or failed_from) == saved, (saved, looked[0])
    kernels = {p for p in cold if p.endswith(".so")}
    assert kernels, "the cold start compiled no kernel onto the claim"
    new = sorted(p for p in warm if p not in cold)
    rewritten = sorted(p for p in cold if p in warm and warm[p] != cold[p])
    removed = sorted(p for p in cold if p not in warm)
    assert not [p for p in new if p.endswith(".so")], f"the warm start compiled kernels again: {new[:10]}"
    assert not [p for p in rewritten + removed if p.endswith(".so")], "the warm start replaced the cold start's kernels"
    unchanged = [p for p in cold if warm.get(p) == cold[p]]
    warmups = {k: _warmup_seconds(v) for k, v in logs.items()}

    def by_folder(paths) -> str:
        count: dict[str, int] = {}
        for p in paths:
            parts = p.split("/")
            top = "/".join(parts[:2]) if parts[0] == "vllm" else parts[0]
            count[top] = count.get(top, 0) + 1
        return ", ".join(f"{k} {n}" for k, n in sorted(count.items())) or "none"

    size = sum((claim_dir / p).stat().st_size for p in unchanged)
    REPORT.note(
        f"warm restart ({SCENARIO}, cache.type pvc mounted at {mount}, pod sandbox, 2 cores): healthy after "
        f"{starts['cold']:.1f} s cold, {starts['warm']:.1f} s warm, {starts['control']:.1f} s cold again on a "
        f"fresh claim; model warm-up (compilation) {warmups['cold']:.0f} s cold, {warmups['warm']:.0f} s warm, "
        f"{warmups['control']:.0f} s control. The warm start looked up {saved} and "
        + (f"loaded it" if loaded_from else f"could not load it ({reason.strip()}), so it compiled again")
        + f"; inductor's cache served that compile: {len(kernels)} compiled kernels (.so) of the cold start "
        f"reused, none compiled again. Files of the cold start unchanged (same inode and mtime): {len(unchanged)} "
        f"({size / 1024:.0f} KiB; {by_folder(unchanged)}); rewritten: {len(rewritten)} ({by_folder(rewritten)}); "
        f"new: {len(new)} ({by_folder(new)})")
    assert warmups["warm"] < 0.75 * min(warmups["cold"], warmups["control"]), warmups

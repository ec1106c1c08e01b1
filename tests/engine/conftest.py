"""Fixtures of the engine tier: the engine venv, tiny local models, rendered scenarios, and a
pool that keeps at most one real vLLM server running at a time (2 shared cores).

Every test here is marked `engine`. A missing engine venv is an ERROR naming
`make engine-setup`, never a skip."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# tests/conftest.py puts the repository root on sys.path.
from tests.engine import scenarios as sc
from tests.engine.engine_env import EngineVenv, engine_venv, run_script
from tests.engine.report import REPORT
from tests.engine.server import VllmServer, free_port

# The order the engine test modules run in (pytest would collect them alphabetically). Servers are
# pooled and shared between modules: the scenario servers of test_serve are reused by
# test_metrics, test_bench_sweep and test_drain, which stops them; test_hub_revision comes after
# the drain so no shared server is restarted. tests/engine/README.md lists the same order. A new
# module must be placed here.
ENGINE_ORDER = (
    "test_pin",
    "test_args",
    "test_sizing",
    "test_kv_offload",
    "test_pod_sandbox",
    "test_warm_restart",
    "test_api_key",
    "test_serve",
    "test_multinode",
    "test_metrics",
    "test_bench_sweep",
    "test_probes",
    "test_drain",
    "test_hub_revision",
    "test_staging",
    "test_ray_auth",
    "test_ray_serve",
    "test_ray_pd",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    slots = [i for i, item in enumerate(items) if Path(str(item.fspath)).parent == here]
    engine = [items[i] for i in slots]
    for item in engine:
        item.add_marker(pytest.mark.engine)
    unplaced = sorted({Path(str(item.fspath)).stem for item in engine} - set(ENGINE_ORDER))
    if unplaced:
        raise pytest.UsageError(f"tests/engine: add {unplaced} to ENGINE_ORDER in tests/engine/conftest.py "
                                "(the engine modules run in that order)")
    # Stable: the tests of one module keep their order; other tiers' items keep their places.
    engine.sort(key=lambda item: ENGINE_ORDER.index(Path(str(item.fspath)).stem))
    for i, item in zip(slots, engine, strict=True):
        items[i] = item


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    lines = REPORT.lines()
    if lines:
        terminalreporter.section("engine tier")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def engine() -> EngineVenv:
    return engine_venv()  # raises EngineSetupMissing -> test error "run make engine-setup"


@pytest.fixture(scope="session")
def engine_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engine")


@pytest.fixture(scope="session")
def tiny_models(engine: EngineVenv, engine_workdir: Path) -> dict[str, dict[str, Any]]:
    """name -> {"path", "architecture", "config"}: random-weight models written by the engine
    venv's transformers into a temporary folder (no hub)."""
    out = engine_workdir / "models"
    t0 = time.monotonic()
    proc = run_script("write_tiny_models.py", str(out), timeout=300)
    assert proc.returncode == 0, f"writing tiny models failed:\n{proc.stderr[-4000:]}"
    manifest = json.loads(proc.stdout)
    REPORT.note(f"tiny models written in {time.monotonic() - t0:.1f} s: "
                + ", ".join(f"{k} ({v['architecture']})" for k, v in manifest.items()))
    return manifest


@pytest.fixture(scope="session")
def rendered_scenarios() -> dict[str, list[dict[str, Any]]]:
    """scenario name -> rendered vllm-inference objects (Helm 4), for every values/ scenario."""
    dirs = sc.scenario_dirs()
    if not sc.CHART_VLLM.is_dir() or not dirs:
        pytest.fail(f"nothing to check: {sc.CHART_VLLM} or values/*/vllm-inference.yaml missing")
    return {d.name: sc.render_scenario(d) for d in dirs}


class ServerPool:
    """Starts servers on demand and keeps only the last one running: tests that share a server
    are ordered to run back to back, so each distinct configuration starts once."""

    live: list[ServerPool] = []  # pools of this session (stop_all)

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.current: tuple[Any, VllmServer] | None = None
        self.started: list[VllmServer] = []
        ServerPool.live.append(self)

    @classmethod
    def stop_all(cls) -> None:
        """Stops the running server of every pool (a test that runs no vLLM server of its own,
        e.g. a Ray node, needs the cores), without asking for the engine venv."""
        for pool in cls.live:
            pool.stop_current()

    def get(self, key: Any, name: str, args: list[str], env: dict[str, str],
            port: int | None = None) -> VllmServer:
        if self.current is not None and self.current[0] == key and self.current[1].alive():
            return self.current[1]
        self.stop_current()
        port = port or free_port()
        if "--port" not in args:
            args = [*args, "--port", str(port)]
        srv = VllmServer(name=name, args=args, env=env, port=port,
                         log_path=self.workdir / "logs" / f"{len(self.started):02d}-{name}.log")
        self.started.append(srv)
        self.current = (key, srv)
        srv.start()
        secs = srv.wait_healthy()
        REPORT.server(name, secs)
        return srv

    def stop_current(self) -> None:
        if self.current is not None:
            self.current[1].stop()
            self.current = None

    def forget(self, srv: VllmServer) -> None:
        """A test took the server over (e.g. to drain it): never hand it out again."""
        if self.current is not None and self.current[1] is srv:
            self.current = None


@pytest.fixture(scope="session")
def server_pool(engine: EngineVenv, engine_workdir: Path) -> Iterator[ServerPool]:
    pool = ServerPool(engine_workdir)
    yield pool
    pool.stop_current()
    for srv in pool.started:
        srv.stop()

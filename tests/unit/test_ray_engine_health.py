"""The Ray replicas' engine class files/probes/ray_engine_health.py against a stand-in of Ray Serve
LLM's VLLMEngine and vLLM's AsyncLLM: an engine core that delivers a batch per step, which can be
stopped (hung) or have exited. A busy engine passes without an extra request; a busy or idle hung
engine fails within the window; an idle engine must answer a one-token request, which is
cancelled when it cannot; load that arrives while that request waits counts as progress."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[2] / "charts" / "vllm-inference" / "files" / "probes" / "ray_engine_health.py"
WINDOW_S = 0.6
STEP_S = 0.05


class FakeCoreClient:
    """The engine core client: one batch per step while requests are unfinished, none when hung."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()

    async def get_output_async(self) -> list:
        return await self.queue.get()


class FakeOutputProcessor:
    def __init__(self) -> None:
        self.unfinished = 0

    def get_num_unfinished_requests(self) -> int:
        return self.unfinished


class FakeAsyncLLM:
    """AsyncLLM's parts the check uses: engine_core, output_processor, generate, check_health;
    its output handler looks get_output_async up at every batch, as vLLM 0.26's does."""

    def __init__(self) -> None:
        self.engine_core = FakeCoreClient()
        self.output_processor = FakeOutputProcessor()
        self.hung = False
        self.dead = False
        self.serves_health_requests = True  # False: a health request waits behind a full batch
        self.health_requests: list[str] = []
        self.cancelled: list[str] = []
        self._pending: list[asyncio.Future] = []
        self._tasks = [asyncio.ensure_future(self._steps()), asyncio.ensure_future(self._output_handler())]

    async def _steps(self) -> None:
        while True:
            await asyncio.sleep(STEP_S)
            if not self.hung and self.output_processor.unfinished:
                done = self._pending if self.serves_health_requests else []
                self._pending = [] if self.serves_health_requests else self._pending
                self.engine_core.queue.put_nowait(done)

    async def _output_handler(self) -> None:
        while True:
            for fut in await self.engine_core.get_output_async():
                if not fut.done():
                    fut.set_result("token")

    async def generate(self, prompt, params, request_id):
        assert prompt == {"prompt_token_ids": [0]} and params.max_tokens == 1
        self.health_requests.append(request_id)
        fut = asyncio.get_running_loop().create_future()
        self._pending.append(fut)
        self.output_processor.unfinished += 1
        try:
            yield await fut
        except asyncio.CancelledError:
            self.cancelled.append(request_id)
            raise
        finally:
            self.output_processor.unfinished -= 1

    async def check_health(self) -> None:
        if self.dead:
            raise RuntimeError("EngineDeadError")

    def close(self) -> None:
        for t in self._tasks:
            t.cancel()


class FakeVLLMEngine:
    """Ray Serve LLM's VLLMEngine: start() creates the engine client, check_health asks it."""

    def __init__(self) -> None:
        self._engine_client: FakeAsyncLLM | None = None

    async def start(self) -> None:
        self._engine_client = FakeAsyncLLM()

    async def check_health(self) -> None:
        await self._engine_client.check_health()


@pytest.fixture
def health(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """The chart's module, imported over stand-ins of ray's VLLMEngine and vllm's SamplingParams."""
    names = ["ray", "ray.llm", "ray.llm._internal", "ray.llm._internal.serve", "ray.llm._internal.serve.engines",
             "ray.llm._internal.serve.engines.vllm", "ray.llm._internal.serve.engines.vllm.vllm_engine"]
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules[names[-1]].VLLMEngine = FakeVLLMEngine
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = lambda max_tokens: types.SimpleNamespace(max_tokens=max_tokens)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setenv("VLLM_EKS_ENGINE_PROGRESS_WINDOW_S", str(WINDOW_S))
    spec = importlib.util.spec_from_file_location("ray_engine_health", MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "POLL_S", 0.01)
    yield module


def run(coro):
    return asyncio.run(coro)


async def _started(health):
    engine = health.ProgressCheckedVLLMEngine()
    await engine.start()
    return engine, engine._engine_client


async def _timed_check(engine) -> tuple[BaseException | None, float]:
    t0 = time.monotonic()
    try:
        await engine.check_health()
        return None, time.monotonic() - t0
    except Exception as exc:  # noqa: BLE001
        return exc, time.monotonic() - t0


def test_idle_engine_passes_after_one_token(health) -> None:
    async def go():
        engine, llm = await _started(health)
        err, secs = await _timed_check(engine)
        llm.close()
        return err, secs, llm

    err, secs, llm = run(go())
    assert err is None, err
    assert len(llm.health_requests) == 1 and not llm.cancelled
    assert secs < WINDOW_S


def test_busy_engine_passes_without_a_request(health) -> None:
    async def go():
        engine, llm = await _started(health)
        llm.output_processor.unfinished = 120  # saturated: a full batch and a queue
        results = [await _timed_check(engine) for _ in range(3)]
        llm.close()
        return results, llm

    results, llm = run(go())
    assert all(err is None for err, _ in results), results
    assert llm.health_requests == []


def test_busy_hung_engine_fails_within_the_window(health) -> None:
    async def go():
        engine, llm = await _started(health)
        llm.output_processor.unfinished = 4
        llm.hung = True  # SIGSTOP of the engine core: no batch arrives
        err, secs = await _timed_check(engine)
        llm.close()
        return err, secs, llm

    err, secs, llm = run(go())
    assert isinstance(err, RuntimeError), err
    assert "4 request(s) unfinished and no engine core output in 0.6 s" in str(err)
    assert WINDOW_S <= secs < WINDOW_S + 0.5
    assert llm.health_requests == []


def test_idle_hung_engine_fails_and_its_request_is_cancelled(health) -> None:
    async def go():
        engine, llm = await _started(health)
        llm.hung = True
        err, secs = await _timed_check(engine)
        llm.close()
        return err, secs, llm

    err, secs, llm = run(go())
    assert isinstance(err, RuntimeError) and "idle engine" in str(err), err
    assert WINDOW_S <= secs < WINDOW_S + 0.5
    assert llm.cancelled == llm.health_requests and len(llm.cancelled) == 1
    assert llm.output_processor.unfinished == 0


def test_load_arriving_during_the_one_token_request_counts(health) -> None:
    async def go():
        engine, llm = await _started(health)
        llm.serves_health_requests = False  # the health request waits behind the new load

        async def load_arrives():
            await asyncio.sleep(0.1)
            llm.output_processor.unfinished += 50

        arrival = asyncio.ensure_future(load_arrives())
        err, secs = await _timed_check(engine)
        await arrival
        llm.close()
        return err, secs, llm

    err, secs, llm = run(go())
    assert err is None, err
    assert secs < WINDOW_S
    assert llm.cancelled == llm.health_requests and len(llm.cancelled) == 1


def test_exited_engine_fails_as_before(health) -> None:
    async def go():
        engine, llm = await _started(health)
        llm.dead = True
        err, _ = await _timed_check(engine)
        llm.close()
        return err, llm

    err, llm = run(go())
    assert str(err) == "EngineDeadError"
    assert llm.health_requests == []


def test_not_started_engine_is_left_to_serve(health) -> None:
    engine = health.ProgressCheckedVLLMEngine()
    engine._engine_client = FakeAsyncLLM.__new__(FakeAsyncLLM)
    engine._engine_client.dead = False
    assert run(engine.check_health()) is None


@pytest.mark.parametrize("raw", ["0", "-3", "soon"])
def test_bad_window_is_one_clear_error(health, raw: str) -> None:
    with pytest.raises(ValueError) as err:
        health.progress_window_s({"VLLM_EKS_ENGINE_PROGRESS_WINDOW_S": raw})
    assert str(err.value) == f"VLLM_EKS_ENGINE_PROGRESS_WINDOW_S={raw!r}: a number of seconds above 0 is valid"


def test_window_default(health) -> None:
    assert health.progress_window_s({}) == health.DEFAULT_WINDOW_S == 25.0

"""Engine class of the Ray topologies' LLM replicas: Ray Serve LLM's VLLMEngine with a health check
that also fails a hung engine core, never a busy one.

Ray Serve health-checks every replica by calling LLMServer.check_health, which awaits the engine's
check_health; VLLMEngine's only asks vLLM's AsyncLLM.check_health, which raises once the engine
core process has exited (`errored`), not when it is stopped or deadlocked (Ray 2.58.0
ray/llm/_internal/serve/core/server/llm_server.py, engines/vllm/vllm_engine.py; vLLM 0.26.0
vllm/v1/engine/async_llm.py). The chart names this class in RAYLLM_VLLM_ENGINE_CLS of every LLM
deployment's runtime_env (LLMServer._get_default_engine_class imports it; it reaches the
disaggregated pools' server classes too) with this folder on PYTHONPATH (docs/topologies.md,
"Probes").

The check passes when the engine core delivers output within the window
(VLLM_EKS_ENGINE_PROGRESS_WINDOW_S): AsyncLLM's output handler awaits
engine_core.get_output_async() for every batch the core sends, one per scheduler step with log
stats on (vllm/v1/core/sched/scheduler.py update_from_output attaches the step's scheduler
stats). With requests unfinished that is the next step: a saturated engine passes without an
extra request. With none, the check sends a one-token request, whose output is the progress. The
window must exceed the longest single engine step (a full decode batch or one prefill chunk) and
stay below Serve's health_check_timeout_s, so that a hung core gives a failure of its own."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable

from ray.llm._internal.serve.engines.vllm.vllm_engine import VLLMEngine

WINDOW_ENV = "VLLM_EKS_ENGINE_PROGRESS_WINDOW_S"
DEFAULT_WINDOW_S = 25.0
POLL_S = 0.2

logger = logging.getLogger("ray.serve")


class OutputCounter:
    """Counts the batches the engine core hands to AsyncLLM's output handler."""

    def __init__(self) -> None:
        self.batches = 0
        self.last_batch_at: float | None = None

    def install(self, engine_core: object) -> OutputCounter:
        """Wrap the core client's get_output_async on the instance: the output handler looks the
        method up on the client at every batch, so the next one is counted."""
        fetch = engine_core.get_output_async

        async def counted_get_output_async():
            outputs = await fetch()
            self.batches += 1
            self.last_batch_at = time.monotonic()
            return outputs

        engine_core.get_output_async = counted_get_output_async
        return self


def progress_window_s(env: dict[str, str] | os._Environ = os.environ) -> float:
    raw = env.get(WINDOW_ENV, "")
    try:
        window = float(raw) if raw else DEFAULT_WINDOW_S
    except ValueError:
        raise ValueError(f"{WINDOW_ENV}={raw!r}: a number of seconds above 0 is valid") from None
    if window <= 0:
        raise ValueError(f"{WINDOW_ENV}={raw!r}: a number of seconds above 0 is valid")
    return window


async def engine_progress_problem(counter: OutputCounter, unfinished: Callable[[], int],
                                  one_token: Callable[[], Awaitable[object]], window_s: float,
                                  clock: Callable[[], float] = time.monotonic,
                                  poll_s: float = POLL_S) -> str | None:
    """None when the engine core delivers a batch within `window_s`, else why not. A busy engine
    (unfinished requests) gets no extra request; an idle one gets `one_token()`, cancelled once
    any batch arrived (load may have come meanwhile) or the window is over."""
    seen = counter.batches
    busy = unfinished()
    nudge = None if busy else asyncio.ensure_future(one_token())
    started = clock()
    try:
        while True:
            if counter.batches > seen:
                return None
            if nudge is not None and nudge.done() and nudge.exception() is not None:
                return f"the one-token health request failed: {nudge.exception()!r}"
            if clock() - started >= window_s:
                break
            await asyncio.sleep(poll_s)
    finally:
        if nudge is not None and not nudge.done():
            nudge.cancel()
            await asyncio.gather(nudge, return_exceptions=True)
    if busy:
        return f"{busy} request(s) unfinished and no engine core output in {window_s:g} s"
    return f"no engine core output in {window_s:g} s for a one-token request on an idle engine"


class ProgressCheckedVLLMEngine(VLLMEngine):
    """VLLMEngine whose check_health also requires engine core progress (module docstring)."""

    _counter: OutputCounter | None = None

    async def start(self) -> None:
        await super().start()
        self._window_s = progress_window_s()
        self._counter = OutputCounter().install(self._engine_client.engine_core)
        logger.info("Engine progress health check on: engine core output required within %g s", self._window_s)

    async def _one_token(self) -> None:
        from vllm import SamplingParams

        request_id = f"vllm-eks-health-{uuid.uuid4().hex}"
        async for _ in self._engine_client.generate({"prompt_token_ids": [0]},
                                                    SamplingParams(max_tokens=1), request_id):
            pass

    async def check_health(self) -> None:
        await super().check_health()  # an exited engine core
        if self._counter is None:  # not started yet
            return
        problem = await engine_progress_problem(
            self._counter, self._engine_client.output_processor.get_num_unfinished_requests,
            self._one_token, self._window_s, poll_s=POLL_S)
        if problem:
            logger.error("Engine progress health check failed: %s", problem)
            raise RuntimeError(f"engine progress health check: {problem}")

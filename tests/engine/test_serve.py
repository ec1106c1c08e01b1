"""Single-node scenarios served for real: the rendered `vllm serve` command (CPU substitutions
only, see tests/engine/cpu.py) starts, answers the OpenAI API and the chart's helm test pod,
and logs the KV cache size the generator predicts for the same budget."""

from __future__ import annotations

import json

import pytest

from tests.engine import scenarios as sc
from tests.engine.engine_plans import predict, prediction_caveat
from tests.engine.report import REPORT
from tests.engine.serving import ScenarioRun, prepare, run_helm_test_pods, scenario_order, server_key


def _scenario_names() -> list[str]:
    """Single-node scenarios, by the topology their plan.json records (cheap at collection);
    the fixture then insists the render has the Deployment to serve."""
    names = []
    for d in sc.scenario_dirs():
        plan = json.loads((d / "plan.json").read_text())
        if plan["topology"] == "single-node":
            names.append(d.name)
    return scenario_order(names)


@pytest.fixture(scope="module", params=_scenario_names())
def scenario_run(request, rendered_scenarios, tiny_models, server_pool) -> ScenarioRun:
    name = request.param
    objects = rendered_scenarios[name]
    run = prepare(name, objects, tiny_models)
    run.server = server_pool.get(server_key(run), f"scenario-{name}", run.sub.args, run.sub.env,
                                 port=int(sc.flag_value(run.sub.args, "--port")))
    return run


def test_health(scenario_run: ScenarioRun) -> None:
    status, body = scenario_run.server.request("GET", "/health")
    assert status == 200, body


def test_models_lists_served_name(scenario_run: ScenarioRun) -> None:
    status, body = scenario_run.server.request("GET", "/v1/models")
    assert status == 200, body
    ids = [m["id"] for m in body["data"]]
    assert scenario_run.served_model_name in ids, (scenario_run.name, ids)


def test_completion(scenario_run: ScenarioRun) -> None:
    status, body = scenario_run.server.request("POST", "/v1/completions", {
        "model": scenario_run.served_model_name, "prompt": "The capital of France is",
        "max_tokens": 8, "temperature": 0})
    assert status == 200, body
    choice = body["choices"][0]
    assert choice["finish_reason"] in ("length", "stop"), body
    assert body["usage"]["completion_tokens"] >= 1, body


def test_chat_completion(scenario_run: ScenarioRun) -> None:
    status, body = scenario_run.server.request("POST", "/v1/chat/completions", {
        "model": scenario_run.served_model_name,
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "Hello, how are you today?"}],
        "max_tokens": 8})
    assert status == 200, body
    assert body["choices"][0]["message"]["role"] == "assistant", body
    assert body["usage"]["prompt_tokens"] > 0, body


def test_helm_test_pod_script(scenario_run: ScenarioRun, tmp_path) -> None:
    runs = run_helm_test_pods(scenario_run.objects, scenario_run.server.base_url, tmp_path)
    assert runs, f"{scenario_run.name}: the chart renders no helm test pod"
    for r in runs:
        assert r.substitutions, f"{r.pod}: the Service URL was not found in the test pod"
        assert r.returncode == 0, f"{r.pod}/{r.container} exited {r.returncode}:\n{r.output}"


def test_sizing_matches_generator(scenario_run: ScenarioRun) -> None:
    """The scenario's own engine settings (block size, context, batch limits) with the tiny
    model and the CPU budget: the generator must predict what this engine logs."""
    args = scenario_run.sub.args  # the block size the engine actually ran with
    logged = scenario_run.server.sizing()
    block = int(sc.flag_value(args, "--block-size") or 128)
    mnbt = sc.flag_value(args, "--max-num-batched-tokens")
    mns = sc.flag_value(args, "--max-num-seqs")
    pred = predict(f"{scenario_run.tiny_path}/config.json",
                   kv_cache_gib=int(scenario_run.sub.env["VLLM_CPU_KVCACHE_SPACE"]),
                   block_size=block, max_model_len=logged.max_model_len,
                   max_num_seqs=int(mns) if mns else None,
                   max_num_batched_tokens=int(mnbt) if mnbt else None)
    matched = (pred.kv_cache_tokens == logged.tokens
               and pred.concurrency_as_logged == logged.max_concurrency)
    REPORT.sizing_case(
        f"{scenario_run.tiny} (scenario {scenario_run.name}) KV {scenario_run.sub.env['VLLM_CPU_KVCACHE_SPACE']} GiB, "
        f"block {block}, len {logged.max_model_len}: engine {logged.tokens:,} tokens "
        f"{logged.max_concurrency}x, generator {pred.kv_cache_tokens:,} {pred.concurrency_as_logged}x",
        matched)
    assert matched, (f"engine logged {logged}, generator predicted {pred}\n  {pred.command}"
                     + prediction_caveat())

"""The disaggregated scenario's RayService run on Ray here: the rendered serveConfigV2 of
`ray.serve.llm:build_pd_openai_app` (a prefill pool and a decode pool, NIXL moving the KV cache
between their engines) deployed with `serve deploy` on a local Ray node started by the head
container's rendered command, the way tests/engine/test_ray_serve.py runs the ray-serve scenario
(tests/engine/ray_serve.py lists every change; the test prints them).

The changes beyond the ray-serve scenario's:
- the model: a random-weight Qwen3 stand-in (tests/engine/scripts/write_tiny_models.py `qwen3`)
  for Qwen/Qwen3-8B; model_id, the name clients send, stays as rendered;
- each pool's placement bundle {CPU: 1, GPU: 1, <pool>: 1} loses its GPU only; the pool's
  custom resource stays, and the head node offers the worker groups' custom resources
  (`--resources`), the worker groups themselves not being started;
- NIXL's backend LIBFABRIC -> UCX: LIBFABRIC runs over EFA, which only a real cluster has; UCX
  moves the KV cache between the two engine processes of this machine. kv_buffer_device stays
  cpu as rendered (the only one vLLM 0.26.0's NixlConnector takes on the CPU platform, where
  the KV cache itself is registered with NIXL as DRAM);
- Ray's logical CPU count 3 on 2 cores: the two pools' bundles (1 CPU each, as rendered) and
  the OpenAI ingress (Serve's default 1 CPU), which the cluster puts on three pods.

The nixl wheels are the Ray image's (mk/ray.mk RAY_ADDED_REQUIREMENTS: the pins of the ray
2.58.0 wheel's `llm` extra). What cannot run here: LIBFABRIC over EFA between two GPU nodes,
and the GPU memory NIXL registers there (a real cluster shows both)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.engine import scenarios as sc
from tests.engine.cpu import SCENARIO_KV_GIB
from tests.engine.engine_env import EngineVenv, ray_venv
from tests.engine.ray_serve import RayApp, deployed, http, llm_configs, serve_config, write_stand_in
from tests.engine.report import REPORT

SCENARIO = "qwen3-8b-g6-8xlarge-disaggregated"
# the two pools' bundles (CPU 1 each, as rendered) and the ingress (1): one node holds them here
LOGICAL_CPUS = 3
METRICS_WAIT_S = 90
# vLLM's counters as Ray's metrics agent exports them (vllm/v1/metrics/ray_wrappers.py at
# v0.26.0: `vllm:` -> `ray_vllm_`, a ReplicaId tag with the Serve replica's id)
PROMPT = "ray_vllm_prompt_tokens_total"
GENERATION = "ray_vllm_generation_tokens_total"
BY_SOURCE = "ray_vllm_prompt_tokens_by_source_total"
EXTERNAL_HITS = "ray_vllm_external_prefix_cache_hits_total"
NIXL_BYTES = "ray_vllm_nixl_bytes_transferred_sum"
NIXL_XFERS = "ray_vllm_nixl_bytes_transferred_count"
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)\{(?P<labels>.*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@pytest.fixture(scope="module")
def rayv() -> EngineVenv:
    return ray_venv()


@pytest.fixture(scope="module")
def qwen3_model(rayv: EngineVenv, engine_workdir: Path) -> dict:
    """The Qwen3 stand-in (the scenario's model is a Qwen3ForCausalLM)."""
    return write_stand_in(rayv, engine_workdir, "qwen3")


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    return sc.render_scenario(sc.VALUES / SCENARIO)


@pytest.fixture(scope="module")
def app(rayv, qwen3_model, rendered, engine_workdir):
    from tests.engine.conftest import ServerPool

    ServerPool.stop_all()  # vLLM servers and a Ray node on two shared cores: one at a time
    plan = json.loads((sc.VALUES / SCENARIO / "plan.json").read_text())
    assert plan["topology"] == "disaggregated", plan["topology"]
    a = RayApp(rayv, engine_workdir / "ray-pd", rendered, qwen3_model["path"], num_cpus=LOGICAL_CPUS)
    with deployed(a, f"ray-pd {SCENARIO}", "application RUNNING (prefill + decode engines)") as a:
        yield a


def test_rendered_config_is_build_pd_openai_app_over_nixl(rendered) -> None:
    """What the test deploys is the chart's disaggregated app: build_pd_openai_app with a
    prefill and a decode config, each with NIXL over LIBFABRIC and a host KV buffer."""
    config = serve_config(rendered)
    (app,) = config["applications"]
    assert app["import_path"] == "ray.serve.llm:build_pd_openai_app", app["import_path"]
    assert set(app["args"]) >= {"prefill_config", "decode_config"}, list(app["args"])
    for llm in llm_configs(config):
        kv = llm["engine_kwargs"]["kv_transfer_config"]
        assert kv["kv_connector"] == "NixlConnector" and kv["kv_buffer_device"] == "cpu", kv
        assert kv["kv_connector_extra_config"]["backends"] == ["LIBFABRIC"], kv


def _pools(app: RayApp) -> dict[str, tuple[str, set[str]]]:
    """pool -> (deployment name, replica ids) as Serve reports them."""
    (a,) = app.applications().values()
    out = {}
    for pool, prefix in (("prefill", "Prefill:"), ("decode", "Decode:")):
        (name,) = [n for n in a["deployments"] if n.startswith(prefix)]
        out[pool] = (name, {r["replica_id"] for r in a["deployments"][name].get("replicas") or []})
    return out


def test_prefill_and_decode_deployments_running(app: RayApp) -> None:
    apps = app.applications()
    assert set(apps) == {a["name"] for a in app.rendered["applications"]}, apps
    for name, a in apps.items():
        assert a["status"] == "RUNNING", (name, a.get("message"))
        assert all(d["status"] == "HEALTHY" for d in a["deployments"].values()), a["deployments"]
    pools = _pools(app)
    assert all(len(ids) == 1 for _, ids in pools.values()), pools
    REPORT.note(f"ray-pd {SCENARIO}: RUNNING after {app.running_s:.0f} s; deployments " + ", ".join(
        f"{n} {d['status']} ({len(d.get('replicas') or [])} replica(s))"
        for a in apps.values() for n, d in a["deployments"].items()))
    assert "image contract (disaggregated): ok" in app.head.log_text(), app.head.log_text()[:2000]


def _counters(app: RayApp) -> dict[tuple[str, str, str], float]:
    """(name, ReplicaId, source) -> value for the series below, summed over other labels."""
    status, text = http(app.metrics_url, timeout=10)
    assert status == 200, text[:500]
    wanted = {PROMPT, GENERATION, BY_SOURCE, EXTERNAL_HITS, NIXL_BYTES, NIXL_XFERS}
    out: dict[tuple[str, str, str], float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or m["name"] not in wanted:
            continue
        labels = dict(_LABEL.findall(m["labels"]))
        key = (m["name"], labels.get("ReplicaId", ""), labels.get("source", ""))
        out[key] = out.get(key, 0.0) + float(m["value"])
    return out


def _delta(after: dict, before: dict, name: str, replicas: set[str], source: str = "") -> float:
    """A counter's increase over a pool's replicas; a series absent is 0 (under Ray vLLM
    skips increments of 0, so a counter appears at its first event)."""
    return sum(after.get((name, r, source), 0.0) - before.get((name, r, source), 0.0) for r in replicas)


def test_request_prefilled_on_one_engine_decoded_on_the_other(app: RayApp) -> None:
    """One chat completion through Serve's HTTP proxy on the OpenAI route: the decode server
    (PDDecodeServer, ray/llm/_internal/serve/serving_patterns/prefill_decode/pd_server.py at
    ray-2.58.0) sends it to the prefill pool as max_tokens 1 with kv_transfer_params, then to its
    own engine with the prefill's kv_transfer_params. The engines' counters (Ray's metrics
    agent, by Serve replica) show it: the prefill engine computed the prompt and generated 1
    token; the decode engine took the prompt's KV from the prefill engine through NIXL
    (external_kv_transfer prompt tokens, external prefix-cache hits, bytes NIXL moved) and
    generated the completion."""
    model = llm_configs(app.rendered)[0]["model_loading_config"]["model_id"]
    pools = _pools(app)
    before = _counters(app)
    prompt = " ".join(["Prefill and decode run on two engines that share the KV cache."] * 4)
    max_tokens = 8
    t0 = time.monotonic()
    status, body = http(f"{app.proxy}/v1/chat/completions", {
        "model": model, "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}, timeout=300)
    secs = time.monotonic() - t0
    assert status == 200, body
    out = json.loads(body)
    usage = out["usage"]
    assert out["model"] == model and usage["completion_tokens"] == max_tokens, out
    prefill, decode = pools["prefill"][1], pools["decode"][1]

    def figures(after: dict) -> dict[str, float]:
        return {
            "prefill prompt": _delta(after, before, PROMPT, prefill),
            "prefill generated": _delta(after, before, GENERATION, prefill),
            "prefill computed": _delta(after, before, BY_SOURCE, prefill, "local_compute"),
            "decode generated": _delta(after, before, GENERATION, decode),
            "decode prompt": _delta(after, before, PROMPT, decode),
            "decode from KV transfer": _delta(after, before, BY_SOURCE, decode, "external_kv_transfer"),
            "decode computed": _delta(after, before, BY_SOURCE, decode, "local_compute"),
            "decode external prefix-cache hits": _delta(after, before, EXTERNAL_HITS, decode),
            "decode NIXL transfers": _delta(after, before, NIXL_XFERS, decode),
            "decode NIXL bytes": _delta(after, before, NIXL_BYTES, decode),
            "prefill NIXL transfers": _delta(after, before, NIXL_XFERS, prefill),
        }

    # the agent exports what the engines recorded at its own interval: wait for both engines
    deadline = time.monotonic() + METRICS_WAIT_S
    while True:
        got = figures(_counters(app))
        if (got["prefill prompt"] >= usage["prompt_tokens"] and got["decode generated"] >= max_tokens
                and got["decode NIXL transfers"] >= 1) or time.monotonic() > deadline:
            break
        time.sleep(3)
    REPORT.note(f"ray-pd {SCENARIO}: POST {app.proxy}/v1/chat/completions (model {model}) -> 200 in {secs:.1f} s, "
                f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens; counters by "
                f"engine (prefill {pools['prefill'][0]}, decode {pools['decode'][0]}): "
                + ", ".join(f"{k} {v:g}" for k, v in got.items()))
    # each engine's progress health check (files/probes/ray_engine_health.py) may have sent its own
    # idle probes meanwhile: one prompt token computed locally, one token generated, no transfer
    probes = {"prefill": got["prefill generated"] - 1, "decode": got["decode generated"] - max_tokens}
    REPORT.note(f"ray-pd {SCENARIO}: health-check probes during the request window: {probes}")
    assert min(probes.values()) >= 0, got
    # the prefill engine: the whole prompt, one token (max_tokens 1), nothing it pulled
    assert got["prefill prompt"] == got["prefill computed"] == usage["prompt_tokens"] + probes["prefill"], got
    assert got["prefill NIXL transfers"] == 0, got
    # the decode engine: the completion, from a prompt whose KV came over NIXL; what it computes
    # itself for the request is at most a partial block
    assert got["decode NIXL transfers"] >= 1 and got["decode NIXL bytes"] > 0, got
    assert got["decode from KV transfer"] > 0, got
    assert got["decode external prefix-cache hits"] == got["decode from KV transfer"], got
    pulled, computed = got["decode from KV transfer"], got["decode computed"] - probes["decode"]
    assert got["decode prompt"] == usage["prompt_tokens"] + probes["decode"], got
    assert pulled + computed == usage["prompt_tokens"], got
    block = int(llm_configs(app.config)[1]["engine_kwargs"]["block_size"])
    assert computed < block, got
    # NIXL moves whole KV blocks: the blocks that hold the transferred tokens, every layer's K and V
    kv_bytes = _kv_bytes_per_token(Path(app.model_path))
    blocks = -(-int(pulled) // block)
    REPORT.note(f"ray-pd {SCENARIO}: NIXL (UCX backend, KV registered as DRAM) moved {got['decode NIXL bytes']:,.0f} B "
                f"in {got['decode NIXL transfers']:g} transfer(s) for {pulled:g} prompt tokens: "
                f"{blocks} blocks of {block} tokens x {kv_bytes} B of KV per token for the stand-in; KV budget "
                f"{SCENARIO_KV_GIB} GiB per engine")
    assert got["decode NIXL bytes"] == blocks * block * kv_bytes, (got, blocks, kv_bytes)


def _kv_bytes_per_token(model: Path) -> int:
    config = json.loads((model / "config.json").read_text())
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return 2 * config["num_key_value_heads"] * head_dim * 2 * config["num_hidden_layers"]  # K and V, bf16

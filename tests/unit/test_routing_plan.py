"""The routing section of the Plan (planning/routing.py), its derivations in `explain`, the values
dicts of values/vllm_inference/routing_build.py and the `vllm-eks values` routing flags."""

from __future__ import annotations

import json
import math
import shlex

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.harness.paths import SCENARIOS_FILE, VALUES
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog, resolve_model
from vllm_eks.core.errors import InvalidOptionError, VllmEksError
from vllm_eks.planning.latency import DEFAULT_TPOT_SLO, decode_step
from vllm_eks.planning.planner import make_plan
from vllm_eks.planning.routing import (
    ALB_IDLE_TIMEOUT_MAX_SECONDS,
    EPP_INDEX_ENTRY_BYTES,
    PICKER_BASE_MEMORY_BYTES,
    alb_idle_timeout,
    alb_max_model_len,
    longest_stream_seconds,
    plan_alb_max_model_len,
)
from vllm_eks.spec.plan import Plan, RoutingPlan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.routing_build import api_key_values, check_routing, gateway_duration, routing_values

SCENARIOS = yaml.safe_load(SCENARIOS_FILE.read_text())["scenarios"]
CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
ROUTING_KEYS = [k for k in RoutingPlan.model_fields if k != "derivations"]


def _scenario_plan(name: str) -> Plan:
    return Plan.from_summary(json.loads((VALUES / name / "plan.json").read_text()))


# ----------------------------------------------------------------------------- the figures

# (scenario, decode tokens/s, longest stream s, request timeout s, ALB idle timeout s or None,
#  picker CPU m, max prefix blocks, LRU capacity per server): the committed plan.json figures,
# checked by hand against the derivations in each scenario's README.
FIGURES = [
    ("llama-3.1-8b-g6e-xlarge", 32.3, 1016, 2040, 1320, 600, 2048, 11889),
    ("qwen2.5-7b-g6-xlarge", 11.8, 1392, 2820, 1740, 600, 1024, 4534),
    ("llama-3.1-70b-p5-48xlarge", 114.0, 1151, 2340, 1440, 600, 8192, 81412),
    ("llama-3.3-70b-fp8-p5-48xlarge", 221.3, 593, 1200, 780, 600, 8192, 94468),
    ("gpt-oss-120b-p5-48xlarge", 630.8, 14, 60, 60, 900, 512, 3083),
    ("llama-3.1-405b-p5-48xlarge-lws", 19.8, 6622, 13260, None, 600, 8192, 40514),
    ("deepseek-v3-p5-48xlarge-lws", 427.0, 385, 780, 540, 600, 10240, 49553),
    ("llama-3.1-70b-g6e-12xlarge-rayservice", 14.7, 1117, 2280, 1440, 600, 1024, 4323),
    ("qwen3-8b-g6-8xlarge-disaggregated", 11.0, 376, 780, 480, 600, 256, 1451),
]


def test_figures_cover_every_scenario():
    assert {f[0] for f in FIGURES} == set(SCENARIOS)


@pytest.mark.parametrize("name,rate,longest,timeout,idle,cpu,blocks,lru", FIGURES, ids=[f[0] for f in FIGURES])
def test_scenario_figures(name, rate, longest, timeout, idle, cpu, blocks, lru):
    r = _scenario_plan(name).routing
    assert r is not None
    assert (r.decode_tokens_per_second, r.longest_stream_seconds, r.request_timeout_seconds,
            r.alb_idle_timeout_seconds, r.picker_cpu_request_millicores, r.picker_max_prefix_blocks,
            r.picker_lru_capacity_per_server) == (rate, longest, timeout, idle, cpu, blocks, lru)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_rules(name):
    """The rules every routing section keeps, from the Plan's other figures."""
    p = _scenario_plan(name)
    r = p.routing
    assert r is not None
    ttft, max_len = p.slo.slo_ttft_p99_seconds, p.memory.max_model_len
    assert r.longest_stream_seconds == math.ceil(ttft + max_len / r.decode_tokens_per_second)
    assert r.request_timeout_seconds >= 2 * r.longest_stream_seconds and r.request_timeout_seconds % 60 == 0
    if r.alb_idle_timeout_seconds is None:
        assert r.longest_stream_seconds >= ALB_IDLE_TIMEOUT_MAX_SECONDS
    else:
        assert r.longest_stream_seconds < r.alb_idle_timeout_seconds <= ALB_IDLE_TIMEOUT_MAX_SECONDS
    # the prefix index: blocks of vLLM's block size, a whole context matched, a KV cache remembered
    assert r.picker_prefix_block_size == p.memory.block_size
    assert (r.picker_max_prefix_blocks - 1) * r.picker_prefix_block_size < max_len
    assert r.picker_max_prefix_blocks * r.picker_prefix_block_size >= max_len
    assert r.picker_lru_capacity_per_server * r.picker_prefix_block_size >= p.memory.kv_cache_tokens
    assert (r.picker_lru_capacity_per_server - 1) * r.picker_prefix_block_size < p.memory.kv_cache_tokens
    index = p.pool.autoscaling_max_replicas * r.picker_lru_capacity_per_server * EPP_INDEX_ENTRY_BYTES
    assert r.picker_memory_request_bytes >= PICKER_BASE_MEMORY_BYTES + 2 * index
    assert r.picker_memory_limit_bytes == 2 * r.picker_memory_request_bytes
    assert r.picker_cpu_request_millicores >= 500 and r.picker_cpu_request_millicores % 100 == 0


def test_decode_rate_is_latencys_step():
    """One decode-step estimate serves the TPOT SLO and the routing timeouts."""
    req = PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge")
    p = make_plan(req)
    step = decode_step(resolve_model("llama-3.1-8b-instruct").architecture, instance_catalog()["g6e.xlarge"],
                       1, 1, p.memory.weights_bytes_total)
    assert step is not None
    assert p.routing.decode_tokens_per_second == round(1 / step.seconds, 1)
    assert p.slo.slo_tpot_p99_seconds == round(max(0.03, 3 * step.seconds), 3)


def test_unknown_hardware_decodes_at_the_default_tpot():
    p = make_plan(PlanRequest(model="llama-3.1-8b-instruct", gpu_memory_mib=81559, gpus_per_node=1,
                              hardware_name="p5.4xlarge"))
    assert p.routing.decode_tokens_per_second == round(1 / DEFAULT_TPOT_SLO, 1)


def test_a_longer_context_streams_longer():
    short = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge", max_model_len=8192))
    long = make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge", max_model_len=32768))
    assert short.routing.longest_stream_seconds < long.routing.longest_stream_seconds
    assert short.routing.picker_max_prefix_blocks == 512


def test_alb_limit_is_exact():
    for ttft, rate in ((0.5, 19.8), (2.1, 19.8), (2.77, 11.0), (0.91, 32.3), (3999.5, 10.0)):
        fits = alb_max_model_len(ttft, rate)
        if fits:
            assert alb_idle_timeout(longest_stream_seconds(ttft, rate, fits)) is not None
        assert alb_idle_timeout(longest_stream_seconds(ttft, rate, fits + 1)) is None
    assert alb_idle_timeout(3999) == ALB_IDLE_TIMEOUT_MAX_SECONDS
    assert alb_idle_timeout(4000) is None


def test_multi_node_counts_leaders_and_ray_says_unused():
    lws = {d.key: d.formula for d in _fresh("llama-3.1-405b-p5-48xlarge-lws").routing.derivations}
    assert "only leaders serve" in lws["picker_cpu_request_millicores"]
    ray = {d.key: d.formula for d in _fresh("llama-3.1-70b-g6e-12xlarge-rayservice").routing.derivations}
    assert "unused" in ray["picker_cpu_request_millicores"]
    assert "79,138" in lws["alb_idle_timeout_seconds"]


def _fresh(name: str) -> Plan:
    args = shlex.split(SCENARIOS[name]["args"])
    kwargs = {a[2:].replace("-", "_"): b for a, b in zip(args[::2], args[1::2]) if a != "--zone"}
    return make_plan(PlanRequest(**kwargs))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(model=st.sampled_from(sorted(model_catalog())), instance=st.sampled_from(sorted(instance_catalog())),
       max_len=st.one_of(st.none(), st.integers(256, 200_000)))
def test_routing_rules_hold_over_the_catalog(model, instance, max_len):
    """Whatever the planner plans, the timeouts and the picker's index keep their rules, and an
    ALB refusal names a max_model_len that an ALB accepts."""
    try:
        p = make_plan(PlanRequest(model=model, instance=instance, max_model_len=max_len))
    except VllmEksError:
        return
    r = p.routing
    assert r is not None and r.decode_tokens_per_second > 0
    assert r.longest_stream_seconds >= p.memory.max_model_len / r.decode_tokens_per_second
    assert r.request_timeout_seconds > r.longest_stream_seconds
    if r.alb_idle_timeout_seconds is None:
        fits = plan_alb_max_model_len(r, p.slo)
        assert fits < p.memory.max_model_len
        assert longest_stream_seconds(p.slo.slo_ttft_p99_seconds, r.decode_tokens_per_second, fits) < 4000
    else:
        assert r.longest_stream_seconds < r.alb_idle_timeout_seconds <= 4000
    assert r.picker_max_prefix_blocks * r.picker_prefix_block_size >= p.memory.max_model_len
    assert r.picker_lru_capacity_per_server * r.picker_prefix_block_size >= p.memory.kv_cache_tokens
    assert 0 < r.picker_memory_request_bytes < r.picker_memory_limit_bytes


# ----------------------------------------------------------------------------- explain

def test_explain_shows_every_routing_derivation(cli):
    r = cli("explain", "--model", "llama-3.1-405b-instruct", "--instance", "p5.48xlarge")
    assert r.exit_code == 0, r.stderr
    for key in ROUTING_KEYS:
        assert f"\n{key} = " in r.stdout, key
    assert "alb_idle_timeout_seconds = None" in r.stdout
    assert "edit-load-balancer-attributes.html" in r.stdout
    assert "approximateprefix" in r.stdout and "blockSizeTokens" in r.stdout


def test_plan_json_prints_routing_flat(plan_json):
    p = plan_json("--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge")
    assert all(k in p for k in ROUTING_KEYS)


# ----------------------------------------------------------------------------- every scenario behind an ALB

@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_fits_an_alb_or_is_refused_in_one_line(cli, tmp_path, name):
    r = _scenario_plan(name).routing
    args = ["values", *shlex.split(SCENARIOS[name]["args"]), "--out", str(tmp_path / "out"),
            "--routing", "alb", "--alb-certificate-arn", CERT, "--vpc-cidr", "10.0.0.0/16"]
    result = cli(*args)
    if r.alb_idle_timeout_seconds is not None:
        assert r.longest_stream_seconds < r.alb_idle_timeout_seconds <= ALB_IDLE_TIMEOUT_MAX_SECONDS
        assert result.exit_code == 0, result.stderr
        # what the chart writes into the Ingress's idle_timeout annotation (test_routing_render)
        written = yaml.safe_load((tmp_path / "out" / "vllm-inference.yaml").read_text())["routing"]["alb"]
        assert written["idleTimeoutSeconds"] == r.alb_idle_timeout_seconds > r.longest_stream_seconds
        return
    assert result.exit_code == 1, result.stdout
    err = result.stderr.rstrip("\n")
    assert "\n" not in err and err.startswith("vllm-eks: error: ") and "Traceback" not in err
    fits = plan_alb_max_model_len(r, _scenario_plan(name).slo)
    assert "--routing" in err and f"--max-model-len {fits} or less" in err, err
    assert not (tmp_path / "out").exists()
    # and the length it names is accepted
    again = cli(*args, "--max-model-len", str(fits))
    assert again.exit_code == 0, again.stderr


def test_at_least_one_scenario_is_refused_an_alb():
    assert any(f[4] is None for f in FIGURES) and any(f[4] is not None for f in FIGURES)


# ----------------------------------------------------------------------------- the values dicts

def test_service_routing_values():
    p = _scenario_plan("llama-3.1-8b-g6e-xlarge")
    assert routing_values(p, ValuesOptions()) == {"routing": {"mode": "service"}}
    assert api_key_values(ValuesOptions()) == {"apiKey": {"existingSecret": "", "secretKey": "api-key"}}
    assert api_key_values(ValuesOptions(api_key_secret="vllm-key")) == {
        "apiKey": {"existingSecret": "vllm-key", "secretKey": "api-key"}}


def test_gateway_routing_values():
    p = _scenario_plan("llama-3.1-70b-p5-48xlarge")
    opts = ValuesOptions(routing="gateway", gateway_name="inference-gateway", gateway_namespace="infra")
    check_routing(p, opts)
    assert routing_values(p, opts) == {"routing": {"mode": "gateway", "gateway": {
        "parentRefs": [{"name": "inference-gateway", "namespace": "infra"}],
        "provider": "none",
        "requestTimeout": "39m",
        "picker": {"resources": {"requests": {"cpu": "600m", "memory": "768Mi"}, "limits": {"memory": "1536Mi"}},
                   "prefixCache": {"blockSize": 16, "maxPrefixBlocksToMatch": 8192,
                                   "lruCapacityPerServer": 81412}}}}}
    istio = ValuesOptions(routing="gateway", gateway_name="gw", gateway_provider="istio")
    assert routing_values(p, istio)["routing"]["gateway"]["provider"] == "istio"
    no_ns = routing_values(p, ValuesOptions(routing="gateway", gateway_name="gw"))
    assert no_ns["routing"]["gateway"]["parentRefs"] == [{"name": "gw"}]


def test_alb_routing_values():
    p = _scenario_plan("qwen2.5-7b-g6-xlarge")
    opts = ValuesOptions(routing="alb", alb_certificate_arn=CERT, alb_scheme="internet-facing",
                         api_key_secret="vllm-api-key")
    check_routing(p, opts)
    assert routing_values(p, opts) == {"routing": {"mode": "alb", "alb": {
        "scheme": "internet-facing", "certificateArn": CERT, "idleTimeoutSeconds": 1740}}}


def test_ray_topologies_get_the_router_and_timeout():
    for name, timeout in (("llama-3.1-70b-g6e-12xlarge-rayservice", 2280), ("qwen3-8b-g6-8xlarge-disaggregated", 780)):
        v = routing_values(_scenario_plan(name), ValuesOptions())
        assert v["rayServe"] == {"requestRouter": "prefix-cache-affinity", "requestTimeoutSeconds": timeout}
    assert "rayServe" not in routing_values(_scenario_plan("llama-3.1-8b-g6e-xlarge"), ValuesOptions())


@pytest.mark.parametrize("seconds,duration", [(120, "2m"), (2040, "34m"), (13260, "3h41m"), (61, "1m1s"),
                                              (45, "45s"), (3600, "1h"), (0, "0s")])
def test_gateway_duration(seconds, duration):
    import re
    assert gateway_duration(seconds) == duration
    assert re.fullmatch(r"([0-9]{1,5}(h|m|s|ms)){1,4}", duration)


def test_a_plan_without_routing_is_refused_by_the_builder():
    p = _scenario_plan("llama-3.1-8b-g6e-xlarge").model_copy(update={"routing": None})
    with pytest.raises(InvalidOptionError, match="no routing section"):
        routing_values(p, ValuesOptions())


# ----------------------------------------------------------------------------- CLI errors

M8 = ["--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge"]
RAY = ["--model", "llama-3.1-70b-instruct", "--instance", "g6e.12xlarge", "--topology", "ray-serve"]
DISAGG = ["--model", "qwen3-8b", "--instance", "g6.8xlarge", "--topology", "disaggregated", "--max-model-len",
          "4096", "--zone", "us-east-1a"]
LWS = ["--model", "llama-3.1-405b-instruct", "--instance", "p5.48xlarge", "--zone", "us-east-1a"]

ROUTING_ERRORS = [
    ("gateway without --gateway", [*M8, "--routing", "gateway"], ["--routing gateway", "--gateway NAME"]),
    ("alb without certificate", [*M8, "--routing", "alb"], ["--routing alb", "--alb-certificate-arn"]),
    ("gateway on ray-serve", [*RAY, "--routing", "gateway", "--gateway", "gw"],
     ["--routing gateway", "--topology ray-serve", "--routing service"]),
    ("gateway on disaggregated", [*DISAGG, "--routing", "gateway", "--gateway", "gw"],
     ["--routing gateway", "--topology disaggregated"]),
    ("api key on ray-serve", [*RAY, "--api-key-secret", "vllm-key"], ["--api-key-secret", "--topology ray-serve"]),
    ("api key on disaggregated", [*DISAGG, "--api-key-secret", "vllm-key"], ["--api-key-secret"]),
    ("alb beyond 4000 s", [*LWS, "--routing", "alb", "--alb-certificate-arn", CERT],
     ["--routing alb", "--max-model-len 131072", "--max-model-len 79138 or less", "4000 s"]),
    ("bad gateway name", [*M8, "--routing", "gateway", "--gateway", "Inference_GW"], ["--gateway"]),
    ("bad gateway namespace", [*M8, "--routing", "gateway", "--gateway", "gw/Infra"], ["--gateway"]),
    ("gateway with empty name", [*M8, "--routing", "gateway", "--gateway", "/infra"], ["--gateway"]),
    ("bad certificate", [*M8, "--routing", "alb", "--alb-certificate-arn", "arn:aws:iam::123456789012:role/x"],
     ["--alb-certificate-arn"]),
    ("bad api key secret", [*M8, "--api-key-secret", "API key"], ["--api-key-secret"]),
    ("gateway flag without gateway routing", [*M8, "--gateway", "gw"], ["--gateway", "--routing gateway"]),
    ("provider without gateway routing", [*M8, "--gateway-provider", "istio"],
     ["--gateway-provider", "--routing gateway"]),
    ("certificate without alb routing", [*M8, "--alb-certificate-arn", CERT], ["--alb-certificate-arn", "--routing alb"]),
    ("scheme without alb routing", [*M8, "--alb-scheme", "internet-facing"], ["--alb-scheme", "--routing alb"]),
    # an internet-facing edge needs authentication: vLLM's API key, or (Ray, which checks none) the ALB's own
    ("internet-facing without a key", [*M8, "--routing", "alb", "--alb-certificate-arn", CERT, "--alb-scheme",
                                       "internet-facing"], ["--alb-scheme internet-facing", "--api-key-secret"]),
    ("internet-facing on ray-serve", [*RAY, "--routing", "alb", "--alb-certificate-arn", CERT, "--alb-scheme",
                                      "internet-facing"], ["--alb-scheme internet-facing", "--topology ray-serve",
                                                           "auth-type"]),
]


@pytest.mark.parametrize("args,must_contain", [c[1:] for c in ROUTING_ERRORS], ids=[c[0] for c in ROUTING_ERRORS])
def test_routing_flag_errors(cli, tmp_path, args, must_contain):
    r = cli("values", *args, "--out", str(tmp_path / "out"))
    assert r.exit_code == 1, (r.exit_code, r.stdout, r.stderr)
    err = r.stderr.rstrip("\n")
    assert "\n" not in err and "Traceback" not in err and err.startswith("vllm-eks: error: "), err
    for text in must_contain:
        assert text in err, (text, err)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [
    [*M8, "--routing", "gateway", "--gateway", "inference-gateway/infra"],
    [*M8, "--routing", "alb", "--alb-certificate-arn", CERT, "--alb-scheme", "internet-facing",
     "--api-key-secret", "vllm-api-key", "--vpc-cidr", "10.0.0.0/16"],
    [*M8, "--api-key-secret", "vllm-api-key"],
    [*RAY, "--routing", "alb", "--alb-certificate-arn", CERT, "--vpc-cidr", "10.0.0.0/16"],
], ids=["gateway", "alb", "api-key", "ray-alb"])
def test_routing_flags_accepted(cli, tmp_path, args):
    r = cli("values", *args, "--out", str(tmp_path / "out"))
    assert r.exit_code == 0, r.stderr
    readme = (tmp_path / "out" / "README.md").read_text()
    assert "--routing" in readme or "--api-key-secret" in readme

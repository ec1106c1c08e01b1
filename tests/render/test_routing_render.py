"""charts/vllm-inference routing (routing.mode service | gateway | alb) and apiKey, rendered with Helm 3
and Helm 4 from the generated scenarios: every object valid for every Kubernetes minor (the pinned
InferencePool and HTTPRoute CRDs included), the InferencePool selecting exactly the pods that serve
(multi-node: leaders), the Endpoint Picker naming its pool and passing Pod Security restricted,
the Ingress annotations, the API key env and the helm test's header, and the Ray Serve router and
timeouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import KUBE_VERSIONS, checkov, helm, pod_security, validate_all
from tests.harness.args import value_of
from tests.harness.paths import CHARTS, VALUES

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
NAMESPACE = "llm"
RELEASE = "vllm"
FULLNAME = "vllm-vllm-inference"
PICKER = f"{FULLNAME}-epp"
SINGLE = VALUES / "qwen2.5-7b-g6-xlarge" / "vllm-inference.yaml"
MULTI = VALUES / "llama-3.1-405b-p5-48xlarge-lws" / "vllm-inference.yaml"
RAY = VALUES / "llama-3.1-70b-g6e-12xlarge-rayservice" / "vllm-inference.yaml"
DISAGG = VALUES / "qwen3-8b-g6-8xlarge-disaggregated" / "vllm-inference.yaml"
CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
GATEWAY = {"routing.mode": "gateway",
           "routing.gateway.parentRefs": [{"name": "inference-gateway", "namespace": "gateway-system"}]}
ALB = {"routing.mode": "alb", "routing.alb.certificateArn": CERT, "networkPolicy.albSourceCidrs": ["10.0.0.0/16"]}
ROUTER_CLASS = "ray.serve.llm.request_router.PrefixCacheAffinityRouter"

# (id, scenario values file, --set-json values): every mode on the topologies it supports.
CASES = {
    "service-single-node": (SINGLE, {}),
    "gateway-single-node": (SINGLE, GATEWAY),
    "gateway-multi-node": (MULTI, GATEWAY),
    "alb-single-node": (SINGLE, ALB),
    "alb-multi-node": (MULTI, ALB),
    "alb-ray-serve": (RAY, ALB),
    "alb-disaggregated": (DISAGG, ALB),
}


def rendered(values_file: Path, set_values: dict[str, Any], helm_version: str = "helm4") -> list[dict[str, Any]]:
    return helm.render_case(CHART, values_file, set_values, helm_version, RELEASE, NAMESPACE)


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = find(objects, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {len(found)}"
    return found[0]


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def server_pod_templates(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """role -> pod template (metadata + spec) of every model-server pod the chart renders."""
    out: dict[str, dict[str, Any]] = {}
    for d in find(objects, "Deployment", FULLNAME):
        out["server"] = d["spec"]["template"]
    for lws in find(objects, "LeaderWorkerSet"):
        t = lws["spec"]["leaderWorkerTemplate"]
        out["leader"], out["worker"] = t["leaderTemplate"], t["workerTemplate"]
    return out


def api_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    templates = server_pod_templates(objects)
    return (templates.get("server") or templates["leader"])["spec"]["containers"][0]


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


# ------------------------------------------------------------------- render and validate


@pytest.mark.parametrize("case", list(CASES))
def test_every_object_valid_for_every_kubernetes_minor(case: str, helm_version: str, crd_registry) -> None:
    values_file, set_values = CASES[case]
    objects = rendered(values_file, set_values, helm_version)
    kinds = {o["kind"] for o in objects}
    mode = set_values.get("routing.mode", "service")
    assert ("InferencePool" in kinds) == ("HTTPRoute" in kinds) == (mode == "gateway")
    assert ("Ingress" in kinds) == (mode == "alb")
    for kube_version in KUBE_VERSIONS:
        report = validate_all(objects, crd_registry, kube_version)
        assert report.total == len(objects)


@pytest.mark.parametrize("case", list(CASES))
def test_helm3_and_helm4_render_the_same_objects(case: str) -> None:
    values_file, set_values = CASES[case]
    assert rendered(values_file, set_values, "helm3") == rendered(values_file, set_values, "helm4")


@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("service")])
def test_lint_strict(case: str, helm_version: str, tmp_path: Path) -> None:
    values_file, set_values = CASES[case]
    helm.lint(CHART, [values_file], helm=helm_version, set_values=set_values)


def test_service_mode_is_the_default_and_adds_nothing() -> None:
    assert rendered(SINGLE, {}) == rendered(SINGLE, {"routing.mode": "service"})
    objects = rendered(SINGLE, {})
    assert not find(objects, "InferencePool") and not find(objects, "Ingress")
    assert not [o for o in objects if o["metadata"]["name"].endswith("-epp")]
    env = env_of(api_container(objects))
    assert "VLLM_API_KEY" not in env and "VLLM_HTTP_TIMEOUT_KEEP_ALIVE" not in env


@pytest.mark.parametrize("case", list(CASES))
def test_every_pod_passes_restricted(case: str) -> None:
    values_file, set_values = CASES[case]
    pods = pod_security.rendered_pod_specs(rendered(values_file, set_values))
    problems = [f"{what}: {v}" for what, spec, ann in pods for v in pod_security.restricted_violations(spec, ann)]
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------- gateway


@pytest.mark.parametrize("values_file", [SINGLE, MULTI], ids=["single-node", "multi-node"])
def test_inference_pool_selects_exactly_the_serving_pods(values_file: Path) -> None:
    objects = rendered(values_file, GATEWAY)
    pool = one(objects, "InferencePool", FULLNAME)["spec"]
    selector = pool["selector"]["matchLabels"]
    templates = server_pod_templates(objects)
    container = api_container(objects)
    http = next(p for p in container["ports"] if p["name"] == "http")
    assert pool["targetPorts"] == [{"number": http["containerPort"]}]
    assert pool["endpointPickerRef"] == {"name": PICKER, "port": {"number": 9002}, "failureMode": "FailOpen"}
    if "server" in templates:
        assert matches(selector, templates["server"]["metadata"]["labels"])
        # the selector is the Deployment's own pod selector: the same pods, no more
        deployment = one(objects, "Deployment", FULLNAME)
        assert selector == deployment["spec"]["selector"]["matchLabels"]
    else:
        # multi-node: the LWS controller labels each pod with its worker index; only leaders ("0")
        # serve HTTP, so the pool selects the leader label on top of the server labels.
        assert selector.get("leaderworkerset.sigs.k8s.io/worker-index") == "0"
        leader = dict(templates["leader"]["metadata"]["labels"], **{"leaderworkerset.sigs.k8s.io/worker-index": "0"})
        worker = dict(templates["worker"]["metadata"]["labels"], **{"leaderworkerset.sigs.k8s.io/worker-index": "1"})
        assert matches(selector, leader) and not matches(selector, worker)
        service = one(objects, "Service", f"{FULLNAME}-api")
        assert selector == service["spec"]["selector"]
    # no pod of the picker or the helm test is selected
    picker = one(objects, "Deployment", PICKER)["spec"]["template"]["metadata"]["labels"]
    assert not matches(selector, picker)
    for test_pod in find(objects, "Pod"):  # helm test pods
        assert not matches(selector, test_pod["metadata"]["labels"])


@pytest.mark.parametrize("values_file", [SINGLE, MULTI], ids=["single-node", "multi-node"])
def test_httproute_sends_every_path_to_the_pool(values_file: Path) -> None:
    objects = rendered(values_file, GATEWAY | {"routing.gateway.hostnames": ["llm.example.com"],
                                                "routing.gateway.requestTimeout": "2h"})
    route = one(objects, "HTTPRoute", FULLNAME)["spec"]
    assert route["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                    "name": "inference-gateway", "namespace": "gateway-system"}]
    assert route["hostnames"] == ["llm.example.com"]
    (rule,) = route["rules"]
    assert rule["backendRefs"] == [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                    "name": FULLNAME}]
    assert rule["timeouts"] == {"request": "2h"}


def test_endpoint_picker_names_its_pool_and_serves_the_upstream_ports() -> None:
    objects = rendered(SINGLE, GATEWAY)
    deployment = one(objects, "Deployment", PICKER)
    pod = deployment["spec"]["template"]["spec"]
    (epp,) = pod["containers"]
    args = epp["args"]
    assert value_of(args, "--pool-name") == FULLNAME
    assert value_of(args, "--pool-namespace") == NAMESPACE
    assert value_of(args, "--pool-group") == "inference.networking.k8s.io"
    assert value_of(args, "--config-file") == "/config/endpoint-picker.yaml"
    assert {"--tracing=false", "--secure-serving=true", "--metrics-endpoint-auth=false"} <= set(args)
    assert "--ha-enable-leader-election" not in args
    assert epp["image"] == "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"
    assert {p["name"]: p["containerPort"] for p in epp["ports"]} == {"grpc": 9002, "grpc-health": 9003, "metrics": 9090}
    for probe in ("livenessProbe", "readinessProbe"):
        assert epp[probe]["grpc"] == {"port": 9003, "service": "inference-extension"}
    assert epp["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    sc = epp["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["serviceAccountName"] == PICKER and pod["automountServiceAccountToken"] is True
    # the picker's pods are its Service's, and never the servers'
    service = one(objects, "Service", PICKER)
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["metadata"]["labels"]["app.kubernetes.io/component"] == "endpoint-picker"
    assert {p["name"]: (p["port"], p.get("appProtocol")) for p in service["spec"]["ports"]} == {
        "grpc-ext-proc": (9002, "http2"), "http-metrics": (9090, None)}
    assert not matches(service["spec"]["selector"], server_pod_templates(objects)["server"]["metadata"]["labels"])
    # the mounted config is the ConfigMap the deployment names
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    assert volume["configMap"]["name"] == one(objects, "ConfigMap", PICKER)["metadata"]["name"]


def test_endpoint_picker_config_has_the_weighted_scorers_and_prefix_parameters() -> None:
    set_values = GATEWAY | {"routing.gateway.picker.scorers": {"queue": 1, "kvCacheUtilization": 0, "prefixCache": 5},
                            "routing.gateway.picker.prefixCache": {"blockSize": 16, "maxPrefixBlocksToMatch": 128,
                                                                   "lruCapacityPerServer": 90000, "autoTune": False}}
    config = yaml.safe_load(one(rendered(SINGLE, set_values), "ConfigMap", PICKER)["data"]["endpoint-picker.yaml"])
    assert config["apiVersion"] == "inference.networking.x-k8s.io/v1alpha1"
    assert config["kind"] == "EndpointPickerConfig"
    assert [p["type"] for p in config["plugins"]] == ["queue-scorer", "prefix-cache-scorer", "max-score-picker"]
    prefix = next(p for p in config["plugins"] if p["type"] == "prefix-cache-scorer")
    # GIE v1.5.0: blockSizeTokens (blockSize is the deprecated character count)
    assert prefix["parameters"] == {"autoTune": False, "blockSizeTokens": 16, "maxPrefixBlocksToMatch": 128,
                                    "lruCapacityPerServer": 90000}
    (profile,) = config["schedulingProfiles"]
    assert profile["name"] == "default"
    assert profile["plugins"] == [{"pluginRef": "queue-scorer", "weight": 1},
                                  {"pluginRef": "prefix-cache-scorer", "weight": 5},
                                  {"pluginRef": "max-score-picker"}]


def test_endpoint_picker_rbac_follows_replicas_and_metrics_auth() -> None:
    objects = rendered(SINGLE, GATEWAY)
    role = one(objects, "Role", PICKER)
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert {"pods", "inferencepools"} <= resources and "leases" not in resources
    binding = one(objects, "RoleBinding", PICKER)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": PICKER, "namespace": NAMESPACE}]
    assert not find(objects, "ClusterRole")
    objects = rendered(SINGLE, GATEWAY | {"routing.gateway.picker.replicas": 2, "routing.gateway.picker.metricsAuth": True})
    role = one(objects, "Role", PICKER)
    assert {"leases", "events"} <= {r for rule in role["rules"] for r in rule["resources"]}
    epp = one(objects, "Deployment", PICKER)["spec"]["template"]["spec"]["containers"][0]
    assert "--ha-enable-leader-election" in epp["args"] and "--metrics-endpoint-auth=true" in epp["args"]
    assert epp["livenessProbe"]["grpc"]["service"] == "liveness"
    assert epp["readinessProbe"]["grpc"]["service"] == "readiness"
    cluster_role = one(objects, "ClusterRole")
    assert {r for rule in cluster_role["rules"] for r in rule["resources"]} == {"tokenreviews", "subjectaccessreviews"}
    assert one(objects, "ClusterRoleBinding")["roleRef"]["name"] == cluster_role["metadata"]["name"]


def test_network_policies_admit_the_picker_and_the_gateway() -> None:
    objects = rendered(SINGLE, GATEWAY | {"networkPolicy.enabled": True, "networkPolicy.allowSameNamespace": False,
                                          "networkPolicy.allowedNamespaces": ["monitoring"]})
    picker_labels = one(objects, "Deployment", PICKER)["spec"]["template"]["metadata"]["labels"]
    servers = one(objects, "NetworkPolicy", FULLNAME)["spec"]
    admitted = [peer for rule in servers["ingress"] if {"port": 8000, "protocol": "TCP"} in rule["ports"]
                for peer in rule["from"]]
    assert any("podSelector" in p and matches(p["podSelector"]["matchLabels"], picker_labels) for p in admitted)
    assert any("gateway-system" in p.get("namespaceSelector", {}).get("matchExpressions", [{}])[0].get("values", [])
               for p in admitted)
    picker = one(objects, "NetworkPolicy", PICKER)["spec"]
    assert picker["podSelector"]["matchLabels"] == one(objects, "Deployment", PICKER)["spec"]["selector"]["matchLabels"]
    by_port = {rule["ports"][0]["port"]: rule["from"] for rule in picker["ingress"]}
    assert by_port[9002][0]["namespaceSelector"]["matchExpressions"][0]["values"] == ["gateway-system", "monitoring"]
    assert by_port[9090][0]["namespaceSelector"]["matchExpressions"][0]["values"] == ["monitoring"]


def test_checkov_passes_the_gateway_objects_with_reasoned_skips() -> None:
    text = helm.template_text(CHART, [SINGLE], set_values=GATEWAY, release=RELEASE, namespace=NAMESPACE)
    result = checkov.scan({"gateway": text})
    assert not result.failed_checks, f"{result.summary()}\n{result.failures_text()}"
    for skip in checkov.skip_annotations(find(rendered(SINGLE, GATEWAY), "Deployment", PICKER)):
        assert skip.has_reason and len(skip.reason) > 20, skip.annotation


# ------------------------------------------------------------------- alb


@pytest.mark.parametrize("values_file,service,port,health", [
    (SINGLE, FULLNAME, 8000, "/health"),
    (MULTI, f"{FULLNAME}-api", 8000, "/health"),
    (RAY, f"{FULLNAME}-serve-svc", 8000, "/-/healthz"),
], ids=["single-node", "multi-node", "ray-serve"])
def test_ingress_annotations_and_backend(values_file: Path, service: str, port: int, health: str) -> None:
    objects = rendered(values_file, ALB | {"routing.alb.idleTimeoutSeconds": 900,
                                           "routing.alb.hosts": ["llm.example.com"],
                                           "routing.alb.annotations": {"alb.ingress.kubernetes.io/group.name": "llm",
                                                                       "alb.ingress.kubernetes.io/scheme": "internet-facing"}})
    ingress = one(objects, "Ingress", FULLNAME)
    annotations = ingress["metadata"]["annotations"]
    planned = yaml.safe_load(values_file.read_text())["drain"]
    drain = planned["preStopSeconds"] + planned["shutdownTimeoutSeconds"]
    assert drain <= planned["terminationGracePeriodSeconds"] < 300
    assert annotations == {
        "alb.ingress.kubernetes.io/target-type": "ip",
        # routing.alb.annotations override the chart's
        "alb.ingress.kubernetes.io/scheme": "internet-facing",
        "alb.ingress.kubernetes.io/certificate-arn": CERT,
        "alb.ingress.kubernetes.io/listen-ports": '[{"HTTPS":443}]',
        # a leaving target drains for the pods' preStop + shutdown timeout, not the ALB's 300 s
        "alb.ingress.kubernetes.io/target-group-attributes": "load_balancing.algorithm.type=least_outstanding_requests,"
                                                             f"deregistration_delay.timeout_seconds={drain}",
        "alb.ingress.kubernetes.io/load-balancer-attributes": "idle_timeout.timeout_seconds=900",
        "alb.ingress.kubernetes.io/healthcheck-path": health,
        "alb.ingress.kubernetes.io/success-codes": "200",
        "alb.ingress.kubernetes.io/group.name": "llm",
    }
    assert json.loads(annotations["alb.ingress.kubernetes.io/listen-ports"]) == [{"HTTPS": 443}]
    spec = ingress["spec"]
    assert spec["ingressClassName"] == "alb"
    (rule,) = spec["rules"]
    assert rule["host"] == "llm.example.com"
    (path,) = rule["http"]["paths"]
    assert path["backend"] == {"service": {"name": service, "port": {"number": port}}}
    # the chart's own Service exists under that name (Ray: KubeRay creates <name>-serve-svc)
    if values_file != RAY:
        assert one(objects, "Service", service)["spec"]["ports"][0]["port"] == port


def test_ingress_without_hosts_has_one_rule_and_waf_when_set() -> None:
    waf = "arn:aws:wafv2:us-east-1:123456789012:regional/webacl/llm/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
    ingress = one(rendered(SINGLE, ALB | {"routing.alb.wafv2AclArn": waf}), "Ingress")
    assert [set(r) for r in ingress["spec"]["rules"]] == [{"http"}]
    assert ingress["metadata"]["annotations"]["alb.ingress.kubernetes.io/wafv2-acl-arn"] == waf


@pytest.mark.parametrize("values_file", [SINGLE, MULTI], ids=["single-node", "multi-node"])
@pytest.mark.parametrize(("routing", "keep_alive"), [
    (ALB | {"routing.alb.idleTimeoutSeconds": 900}, "905"),
    # Envoy-based gateways keep idle upstream connections for an hour by default
    (GATEWAY, "3605"),
    (GATEWAY | {"routing.gateway.upstreamIdleTimeoutSeconds": 300}, "305"),
], ids=["alb", "gateway-default", "gateway-set"])
def test_keep_alive_above_the_idle_timeout_on_the_serving_container_only(values_file: Path, routing,
                                                                         keep_alive: str) -> None:
    objects = rendered(values_file, routing)
    assert env_of(api_container(objects))["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"] == {
        "name": "VLLM_HTTP_TIMEOUT_KEEP_ALIVE", "value": keep_alive}
    worker = server_pod_templates(objects).get("worker")
    if worker:
        assert "VLLM_HTTP_TIMEOUT_KEEP_ALIVE" not in env_of(worker["spec"]["containers"][0])


@pytest.mark.parametrize("values_file", [SINGLE, MULTI], ids=["single-node", "multi-node"])
def test_picker_outlasts_the_servers_it_routes_to(values_file: Path) -> None:
    objects = rendered(values_file, GATEWAY | {"drain.terminationGracePeriodSeconds": 400})
    picker = one(objects, "Deployment", f"{FULLNAME}-epp")["spec"]["template"]["spec"]
    servers = [t["spec"] for t in server_pod_templates(objects).values()]
    assert {s["terminationGracePeriodSeconds"] for s in servers} == {400}
    assert picker["terminationGracePeriodSeconds"] == 400


# ------------------------------------------------------------------- API key


@pytest.mark.parametrize("values_file", [SINGLE, MULTI], ids=["single-node", "multi-node"])
def test_api_key_env_and_the_helm_test_header(values_file: Path) -> None:
    objects = rendered(values_file, {"apiKey.existingSecret": "vllm-api-key", "apiKey.secretKey": "key"})
    ref = {"secretKeyRef": {"name": "vllm-api-key", "key": "key"}}
    assert env_of(api_container(objects))["VLLM_API_KEY"]["valueFrom"] == ref
    worker = server_pod_templates(objects).get("worker")
    if worker:
        assert "VLLM_API_KEY" not in env_of(worker["spec"]["containers"][0])
    test_pod = one(objects, "Pod", f"{FULLNAME}-test")["spec"]["containers"][0]
    assert env_of(test_pod)["API_KEY"]["valueFrom"] == ref
    script = test_pod["command"][-1]
    assert 'set -- -H "Authorization: Bearer $API_KEY"' in script
    assert script.count('curl -fsS --max-time "$TIMEOUT" "$@"') == 2
    # the key itself is never in the rendered output
    assert "Bearer" not in json.dumps(env_of(test_pod))


def test_no_api_key_no_header() -> None:
    test_pod = one(rendered(SINGLE, {}), "Pod")["spec"]["containers"][0]
    assert "API_KEY" not in env_of(test_pod) and "Authorization" not in test_pod["command"][-1]


# ------------------------------------------------------------------- Ray Serve


def _serve_config(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return yaml.safe_load(one(objects, "RayService")["spec"]["serveConfigV2"])


def _llm_configs(serve: dict[str, Any]) -> list[dict[str, Any]]:
    (app,) = serve["applications"]
    args = app["args"]
    return args["llm_configs"] if "llm_configs" in args else [args["prefill_config"], args["decode_config"]]


@pytest.mark.parametrize("values_file", [RAY, DISAGG], ids=["ray-serve", "disaggregated"])
def test_ray_serve_router_and_timeouts(values_file: Path) -> None:
    serve = _serve_config(rendered(values_file, {"rayServe.requestTimeoutSeconds": 1800}))
    assert serve["http_options"] == {"request_timeout_s": 1800}
    for llm in _llm_configs(serve):
        assert llm["deployment_config"]["request_router_config"] == {"request_router_class": ROUTER_CLASS}
    serve = _serve_config(rendered(values_file, ALB | {"routing.alb.idleTimeoutSeconds": 900,
                                                       "rayServe.requestRouter": "power-of-two-choices"}))
    planned = yaml.safe_load(values_file.read_text())["rayServe"]["requestTimeoutSeconds"]
    assert serve["http_options"] == {"request_timeout_s": planned, "keep_alive_timeout_s": 905}
    for llm in _llm_configs(serve):
        assert "request_router_config" not in llm["deployment_config"]


def test_multi_node_liveness_probe_sends_the_api_key(tmp_path: Path) -> None:
    """The leader's exec liveness probe (files/probes/engine_alive.py) asks for one token on /v1,
    which vLLM refuses without the key: it sends VLLM_API_KEY from its container's environment."""
    import http.server
    import os
    import subprocess
    import sys
    import threading

    class Server(http.server.BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - /health
            self._answer(200, {})

        def do_POST(self) -> None:  # noqa: N802 - /v1/completions
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Authorization") != "Bearer test-key":
                self._answer(401, {"error": "Unauthorized"})
            else:
                self._answer(200, {"choices": [{"text": "x"}]})

    server = http.server.HTTPServer(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cmd = [sys.executable, str(CHART / "files" / "probes" / "engine_alive.py"), "--port",
               str(server.server_address[1]), "--model", "m", "--timeout", "5"]
        env = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
        assert subprocess.run(cmd, env=env | {"VLLM_API_KEY": "test-key"}, capture_output=True).returncode == 0
        refused = subprocess.run(cmd, env=env, capture_output=True, text=True)
        assert refused.returncode == 1 and "401" in refused.stdout + refused.stderr
    finally:
        server.shutdown()

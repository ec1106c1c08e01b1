"""Values of charts/vllm-inference for how requests reach the model servers (`routing`) and the
API key vLLM checks (`apiKey`).

routing.mode:
- service: the chart's Service only (ClusterIP by default), as before.
- gateway: Gateway API Inference Extension. An InferencePool selects the model-server pods, an
  HTTPRoute sends a Gateway's traffic to it, and the Endpoint Picker (EPP, GIE v1.5.0: the last
  release of gateway-api-inference-extension that ships it) picks the pod for each request from
  the servers' queue, KV-cache and prefix-cache state. single-node and multi-node only: on Ray
  topologies Ray Serve's own router balances inside the cluster.
- alb: an Ingress for the AWS Load Balancer Controller (an ALB with least-outstanding-requests
  routing to pod IPs), HTTPS only.

Sources are cited in docs and templates; the EPP's flags, ports and plugin parameters are those
of kubernetes-sigs/gateway-api-inference-extension@v1.5.0."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from vllm_eks.core.units import parse_quantity
from vllm_eks.values.base import (
    DNS1123_SUBDOMAIN,
    IMAGE_TAG,
    OPTIONAL_ACM_CERTIFICATE_ARN,
    OPTIONAL_DNS1123_LABEL,
    OPTIONAL_DNS1123_SUBDOMAIN,
    AnnotationMap,
    ContainerImage,
    Int32,
    OptionalQuantity,
    ValuesModel,
)

# The Endpoint Picker image: GIE v1.5.0 (registry.k8s.io, config/charts/epplib/values.yaml).
EPP_IMAGE_REPOSITORY = "registry.k8s.io/gateway-api-inference-extension/epp"
EPP_IMAGE_TAG = "v1.5.0"
# A Gateway API Duration (GEP-2257), as the pinned HTTPRoute CRD's timeouts fields check it.
GATEWAY_DURATION = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"
# A regional WAFv2 web ACL ARN, or empty.
OPTIONAL_WAFV2_ACL_ARN = (r"^(arn:aws(-cn|-us-gov)?:wafv2:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}"
                          r":regional/webacl/[A-Za-z0-9_-]{1,128}/[a-f0-9-]{1,64})?$")
# A Gateway API listener name (SectionName), or empty.
OPTIONAL_SECTION_NAME = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"
# An HTTPRoute / Ingress hostname: a DNS name, optionally with one leading wildcard label.
HOSTNAME = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# The ALB's connection idle timeout: 1 through 4000 seconds (AWS, "Connection idle timeout").
ALB_IDLE_TIMEOUT_MAX = 4000

Hostname = Annotated[str, Field(pattern=HOSTNAME, max_length=253)]
# EndpointPickerConfig scheduling-profile weights (0: the scorer is left out of the config).
Weight = Annotated[int, Field(ge=0, le=1000)]


class PickerImage(ContainerImage):
    repository: str = Field(EPP_IMAGE_REPOSITORY, min_length=1, description=(
        "Endpoint Picker image repository (gateway-api-inference-extension v1.5.0 ships the last EPP "
        "of that project; its successor is ghcr.io/llm-d/llm-d-router-endpoint-picker)"))
    tag: str = Field(EPP_IMAGE_TAG, pattern=IMAGE_TAG, description="Endpoint Picker image tag")


class PickerResourceList(ValuesModel):
    cpu: OptionalQuantity = Field("", description="CPU quantity; empty: not set")
    memory: OptionalQuantity = Field("", description="Memory quantity; empty: not set")


class PickerResources(ValuesModel):
    requests: PickerResourceList = Field(
        default_factory=lambda: PickerResourceList(cpu="500m", memory="1Gi"), description=(
            "Requests of the picker container (the generator sizes them from the Plan: "
            "routing.picker_cpu_request_millicores, picker_memory_request_bytes)"))
    limits: PickerResourceList = Field(
        default_factory=lambda: PickerResourceList(memory="2Gi"), description=(
            "Limits of the picker container (Plan: routing.picker_memory_limit_bytes). No CPU limit by "
            "default: throttling the picker delays every request's routing decision"))

    @model_validator(mode="after")
    def _requests_within_limits(self) -> PickerResources:
        # compared as quantities: "500m" is below "1", "1Gi" above "512Mi"
        for name in ("cpu", "memory"):
            req, lim = getattr(self.requests, name), getattr(self.limits, name)
            if req and lim and parse_quantity(req) > parse_quantity(lim):
                raise ValueError(f"requests.{name} {req} is above limits.{name} {lim} (a request may not exceed "
                                 "its limit)")
        return self


class Scorers(ValuesModel):
    queue: Weight = Field(2, description=(
        "Weight of queue-scorer (vllm:num_requests_waiting) in the default scheduling profile; 0 leaves it out"))
    kv_cache_utilization: Weight = Field(2, description=(
        "Weight of kv-cache-utilization-scorer (vllm:kv_cache_usage_perc); 0 leaves it out"))
    prefix_cache: Weight = Field(3, description=(
        "Weight of prefix-cache-scorer (approximate prefix-cache affinity); 0 leaves it out"))


class PrefixCache(ValuesModel):
    """Parameters of the EPP v1.5.0 prefix-cache-scorer (read by the approx-prefix-cache-producer
    the config loader adds for it: pkg/epp/framework/plugins/requestcontrol/dataproducer/
    approximateprefix/types.go, `config`)."""

    block_size: Int32 = Field(16, ge=1, description=(
        "Prefix block size in tokens: rendered as the plugin's blockSizeTokens (v1.5.0's own blockSize "
        "is a deprecated character count that fails start-up when set alone). Should match the "
        "servers' KV-cache block size"))
    max_prefix_blocks_to_match: Int32 = Field(256, ge=1, description=(
        "maxPrefixBlocksToMatch: how many leading blocks of a prompt are hashed and matched"))
    lru_capacity_per_server: Int32 = Field(31250, ge=1, description=(
        "lruCapacityPerServer: prefix blocks the picker remembers per model server (about the "
        "server's KV-cache capacity in blocks)"))
    auto_tune: bool = Field(False, description=(
        "autoTune: true lets the picker take the block size and capacity from the servers' "
        "vllm:cache_config_info metric instead of the values above (the EPP's default). false: the "
        "Plan's figures above are used as given"))


class Picker(ValuesModel):
    image: PickerImage = Field(default_factory=PickerImage, description="Endpoint Picker image")
    replicas: Int32 = Field(1, ge=1, description=(
        "Picker pods. More than 1: --ha-enable-leader-election (one active leader, the others "
        "standby) and a Role for leases and events"))
    log_verbosity: Int32 = Field(1, ge=0, le=10, description="--v: log verbosity of the picker")
    secure_serving: bool = Field(True, description=(
        "--secure-serving: TLS with a self-signed certificate on the ext-proc port 9002 (the Gateway "
        "must speak TLS to the picker without verifying it). false: plain gRPC"))
    metrics_auth: bool = Field(False, description=(
        "--metrics-endpoint-auth: the picker's /metrics (port 9090) checks the scraper's bearer token "
        "(TokenReview, SubjectAccessReview); true also gives the picker's ServiceAccount the "
        "ClusterRole those reviews need. false: /metrics is open to whoever the NetworkPolicy admits"))
    resources: PickerResources = Field(default_factory=PickerResources, description=(
        "CPU and memory of the picker container (the generator sizes them from the Plan)"))
    scorers: Scorers = Field(default_factory=Scorers, description=(
        "Scorer weights of the EndpointPickerConfig's default scheduling profile (the pod with the highest weighted "
        "score wins: max-score-picker); 0 leaves a scorer out"))
    prefix_cache: PrefixCache = Field(default_factory=PrefixCache, description=(
        "prefix-cache-scorer parameters (GIE v1.5.0 names; the generator computes them). blockSize is rendered as "
        "the EPP's blockSizeTokens; autoTune true takes block size and capacity from the servers' metrics instead"))


class ParentRef(ValuesModel):
    name: str = Field(pattern=DNS1123_SUBDOMAIN, max_length=253, description="Name of the Gateway")
    namespace: str = Field("", pattern=OPTIONAL_DNS1123_LABEL, max_length=63, description=(
        "Namespace of the Gateway; empty: the release namespace. The Gateway's listener must "
        "allow routes from the release namespace (allowedRoutes)"))
    section_name: str = Field("", pattern=OPTIONAL_SECTION_NAME, max_length=253, description=(
        "Listener of the Gateway to attach to; empty: every listener that admits the route"))


# The Gateway implementation, for the objects it needs besides the Gateway API ones. istio: a
# DestinationRule so the Istio gateway speaks TLS to the picker's --secure-serving port (GIE's
# inferencepool chart renders the same for provider.name istio; Istio does not originate TLS to a
# Service on its own). none: nothing extra (the gateway must reach the picker by itself).
GatewayProvider = Literal["none", "istio"]


class Gateway(ValuesModel):
    provider: GatewayProvider = Field("none", description=(
        "The Gateway's implementation. istio: a DestinationRule (networking.istio.io/v1beta1) for the picker's "
        "Service with TLS SIMPLE and insecureSkipVerify, since the picker serves ext-proc with a self-signed "
        "certificate; without it Istio calls the picker in plain text, the call fails and FailOpen silently "
        "falls back to plain balancing. none: no provider objects"))
    parent_refs: list[ParentRef] = Field(default_factory=list, max_length=32, description=(
        "Gateways the HTTPRoute attaches to (HTTPRoute parentRefs: {name, namespace, sectionName}); at least one "
        "when mode is gateway. Their listeners must allow routes from the release namespace"))
    hostnames: list[Hostname] = Field(default_factory=list, max_length=16, description=(
        "HTTPRoute hostnames; empty: every hostname of the listener"))
    request_timeout: str = Field("3600s", pattern=GATEWAY_DURATION, description=(
        "HTTPRoute rules[].timeouts.request (a Gateway API duration, e.g. 3600s, 1h): the whole "
        "request, so longer than the longest streamed response (the generator derives it from the Plan)"))
    failure_mode: Literal["FailOpen", "FailClose"] = Field("FailOpen", description=(
        "InferencePool endpointPickerRef.failureMode. FailOpen: when the picker is down the Gateway "
        "still forwards to a pod it picks itself. FailClose: requests fail while the picker is down"))
    upstream_idle_timeout_seconds: int = Field(3600, ge=1, le=86400, description=(
        "How long the Gateway's data plane keeps an idle connection to a server open. 3600 is Envoy's "
        "default idle timeout of upstream connections, which Envoy-based gateways keep unless configured. "
        "The servers keep connections alive 5 s longer (VLLM_HTTP_TIMEOUT_KEEP_ALIVE), so the gateway never "
        "sends a request on a connection the server is closing. Set it to your gateway's upstream idle timeout"))
    picker: Picker = Field(default_factory=Picker, description="The Endpoint Picker (EPP) Deployment")


class Alb(ValuesModel):
    ingress_class_name: str = Field("alb", pattern=DNS1123_SUBDOMAIN, description=(
        "ingressClassName of the Ingress (the AWS Load Balancer Controller's IngressClass)"))
    scheme: Literal["internal", "internet-facing"] = Field("internal", description=(
        "internal or internet-facing (alb.ingress.kubernetes.io/scheme). internet-facing puts the API on the "
        "internet: authenticate there (annotations auth-type oidc/cognito, wafv2AclArn)"))
    certificate_arn: str = Field("", pattern=OPTIONAL_ACM_CERTIFICATE_ARN, description=(
        "ACM certificate of the HTTPS listener (alb.ingress.kubernetes.io/certificate-arn); required "
        "when mode is alb (the listener is HTTPS only)"))
    hosts: list[Hostname] = Field(default_factory=list, max_length=16, description=(
        "Hosts of the Ingress rules; empty: one rule without host"))
    idle_timeout_seconds: int = Field(600, ge=1, le=ALB_IDLE_TIMEOUT_MAX, description=(
        "The ALB's connection idle timeout (load-balancer-attributes idle_timeout.timeout_seconds, "
        "1-4000): above the longest pause in a streamed response. The servers keep connections "
        "alive 5 s longer (VLLM_HTTP_TIMEOUT_KEEP_ALIVE, Ray http_options.keep_alive_timeout_s), so "
        "the ALB never reuses a connection the server has closed"))
    wafv2_acl_arn: str = Field("", pattern=OPTIONAL_WAFV2_ACL_ARN, description=(
        "Regional WAFv2 web ACL to attach (alb.ingress.kubernetes.io/wafv2-acl-arn); empty: none"))
    annotations: AnnotationMap = Field(default_factory=dict, description=(
        "Extra Ingress annotations (auth-type, auth-idp-oidc / auth-idp-cognito, group.name, ...); "
        "they override the chart's alb.ingress.kubernetes.io annotations of the same key"))


class Routing(ValuesModel):
    mode: Literal["service", "gateway", "alb"] = Field("service", description=(
        "How clients reach the servers. service: the chart's Service only. gateway: an InferencePool, "
        "an HTTPRoute and the Endpoint Picker (Gateway API Inference Extension; single-node and "
        "multi-node only). alb: an Ingress for the AWS Load Balancer Controller"))
    gateway: Gateway = Field(default_factory=Gateway, description=(
        "mode gateway: Gateway API Inference Extension (InferencePool inference.networking.k8s.io/v1)"))
    alb: Alb = Field(default_factory=Alb, description=(
        "mode alb: an Ingress for the AWS Load Balancer Controller (HTTPS only)"))


class ApiKey(ValuesModel):
    existing_secret: str = Field("", pattern=OPTIONAL_DNS1123_SUBDOMAIN, max_length=253, description=(
        "Existing Secret holding the API key clients send as `Authorization: Bearer <key>`; empty: "
        "no key. vLLM reads it from VLLM_API_KEY and checks only /v1 (and /v2, /inference, /cohere) "
        "paths: /health, /metrics, /tokenize and others stay open, so keep them off a public listener. "
        "single-node and multi-node only (Ray Serve's OpenAI app does not check vLLM's key)"))
    secret_key: str = Field("api-key", pattern=r"^[-._a-zA-Z0-9]+$", max_length=253,
                            description="Key of the API key inside that Secret")


# rayServe.requestRouter: Ray Serve LLM's prefix-aware router (public alpha API since Ray 2.49,
# ray-project/ray#54891) or Ray Serve's default power-of-two-choices router.
RayRequestRouter = Literal["prefix-cache-affinity", "power-of-two-choices"]

"""The routing and API-key parts of charts/vllm-inference's values, from a Plan and the
`vllm-eks values` options: `routing`, `apiKey` and, on the Ray topologies, the `rayServe` keys
requestRouter and requestTimeoutSeconds (plain camelCase dicts; the pydantic models of these
values live in values/vllm_inference/routing_model.py).

`check_routing` refuses the combinations the chart cannot serve, naming the flags; the CLI calls
it before writing anything."""

from __future__ import annotations

from typing import Any

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.topology import ON_RAY
from vllm_eks.core.units import bytes_quantity, cpu_quantity
from vllm_eks.planning.routing import ALB_IDLE_TIMEOUT_MAX_SECONDS, plan_alb_max_model_len
from vllm_eks.spec.plan import Plan, RoutingPlan
from vllm_eks.values.options import ValuesOptions

# The key of the API-key Secret the chart reads (apiKey.secretKey's default).
API_KEY_SECRET_KEY = "api-key"
# Ray Serve LLM's prefix-aware router (public alpha API since Ray 2.49): the counterpart of the
# picker's prefix-cache scorer on the Ray topologies.
RAY_REQUEST_ROUTER = "prefix-cache-affinity"


def _routing(plan: Plan) -> RoutingPlan:
    if plan.routing is None:
        raise InvalidOptionError("the plan has no routing section (a plan.json written before routing was "
                                 "planned): run `vllm-eks plan` again")
    return plan.routing


def check_routing(plan: Plan, options: ValuesOptions) -> None:
    """Refuse option combinations the chart cannot serve; each message names the flags and what
    would be valid."""
    mode, topology = options.routing, plan.topology
    if mode != "gateway" and (options.gateway_name or options.gateway_namespace):
        raise InvalidOptionError(f"--gateway is only read with --routing gateway (got --routing {mode})")
    if mode != "gateway" and options.gateway_provider != "none":
        raise InvalidOptionError(f"--gateway-provider is only read with --routing gateway (got --routing {mode})")
    if mode != "alb" and options.alb_certificate_arn:
        raise InvalidOptionError(f"--alb-certificate-arn is only read with --routing alb (got --routing {mode})")
    if mode != "alb" and options.alb_scheme != "internal":
        raise InvalidOptionError(f"--alb-scheme is only read with --routing alb (got --routing {mode})")
    if options.api_key_secret and topology in ON_RAY:
        raise InvalidOptionError(
            f"--api-key-secret does not apply to --topology {topology}: Ray Serve's OpenAI app does not check "
            "vLLM's API key; leave it out and authenticate in front (--routing alb with the ALB's auth annotations)")
    if mode == "gateway":
        if topology in ON_RAY:
            raise InvalidOptionError(
                f"--routing gateway does not apply to --topology {topology}: Ray Serve's router balances requests "
                "inside the RayCluster; use --routing service or --routing alb")
        if not options.gateway_name:
            raise InvalidOptionError("--routing gateway needs --gateway NAME[/NAMESPACE]: the Gateway the "
                                     "HTTPRoute attaches to")
    if mode == "alb" and options.alb_scheme == "internet-facing":
        if topology in ON_RAY:
            raise InvalidOptionError(
                f"--alb-scheme internet-facing would publish --topology {topology}'s API without authentication "
                "(Ray Serve checks no API key): write the values with --alb-scheme internal, then add the ALB's "
                "authentication (routing.alb.annotations alb.ingress.kubernetes.io/auth-type) with the scheme")
        if not options.api_key_secret:
            raise InvalidOptionError(
                "--alb-scheme internet-facing needs --api-key-secret SECRET (vLLM's API key): without it the ALB "
                "would publish the API to anyone")
    if mode == "alb":
        if not options.alb_certificate_arn:
            raise InvalidOptionError("--routing alb needs --alb-certificate-arn "
                                     "arn:aws:acm:REGION:ACCOUNT:certificate/ID: the ALB listens on HTTPS 443")
        routing = _routing(plan)
        if routing.alb_idle_timeout_seconds is None:
            fits = plan_alb_max_model_len(routing, plan.slo)
            raise InvalidOptionError(
                f"--routing alb: a full-length response at --max-model-len {plan.memory.max_model_len} takes about "
                f"{routing.longest_stream_seconds} s, not below the ALB's "
                f"{ALB_IDLE_TIMEOUT_MAX_SECONDS} s idle-timeout "
                f"maximum; use --max-model-len {fits} or less, or --routing "
                + ("service" if topology in ON_RAY else "gateway or --routing service"))


def gateway_duration(seconds: int) -> str:
    """Seconds as a Gateway API Duration (GEP-2257, ^([0-9]{1,5}(h|m|s|ms)){1,4}$): 2040 -> 34m."""
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)


def routing_values(plan: Plan, options: ValuesOptions) -> dict[str, Any]:
    """`routing` (the chosen mode's section only) and, on Ray topologies, the `rayServe` router and
    request timeout. Call check_routing first."""
    routing = _routing(plan)
    section: dict[str, Any] = {"mode": options.routing}
    if options.routing == "gateway":
        ref = {"name": options.gateway_name}
        if options.gateway_namespace:
            ref["namespace"] = options.gateway_namespace
        section["gateway"] = {
            "parentRefs": [ref],
            "provider": options.gateway_provider,
            "requestTimeout": gateway_duration(routing.request_timeout_seconds),
            "picker": {
                "resources": {
                    "requests": {"cpu": cpu_quantity(routing.picker_cpu_request_millicores),
                                 "memory": bytes_quantity(routing.picker_memory_request_bytes)},
                    "limits": {"memory": bytes_quantity(routing.picker_memory_limit_bytes)}},
                "prefixCache": {"blockSize": routing.picker_prefix_block_size,
                                "maxPrefixBlocksToMatch": routing.picker_max_prefix_blocks,
                                "lruCapacityPerServer": routing.picker_lru_capacity_per_server}}}
    elif options.routing == "alb":
        if routing.alb_idle_timeout_seconds is None:
            raise InvalidOptionError("--routing alb: the plan has no ALB idle timeout (see check_routing)")
        section["alb"] = {"scheme": options.alb_scheme, "certificateArn": options.alb_certificate_arn,
                          "idleTimeoutSeconds": routing.alb_idle_timeout_seconds}
    out: dict[str, Any] = {"routing": section}
    if plan.topology in ON_RAY:
        out["rayServe"] = {"requestRouter": RAY_REQUEST_ROUTER,
                           "requestTimeoutSeconds": routing.request_timeout_seconds}
    return out


def api_key_values(options: ValuesOptions) -> dict[str, Any]:
    """`apiKey`: the existing Secret vLLM's API key comes from (empty: no key)."""
    return {"apiKey": {"existingSecret": options.api_key_secret or "", "secretKey": API_KEY_SECRET_KEY}}

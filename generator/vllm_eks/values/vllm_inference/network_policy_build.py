"""charts/vllm-inference's networkPolicy from a Plan and the `vllm-eks values` options: the
namespaces the generator knows connect to the model server (Prometheus), the KubeRay operator's
namespace on the Ray topologies (the only peer of the Ray dashboard), the ALB's source CIDRs and the
Gateway's data-plane namespaces.

KEDA gets no allowance: its ScaledObject queries Prometheus, never the model server's pods.
`check_network_policy` refuses the combinations that would block the routing mode's own traffic;
the CLI calls it before writing anything."""

from __future__ import annotations

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.core.topology import ON_RAY
from vllm_eks.spec.plan import Plan
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.pod import NetworkPolicy, RayOperatorPeers


def check_network_policy(plan: Plan, options: ValuesOptions) -> None:
    """Each message names the flag and what would be valid."""
    mode = options.routing
    if mode != "alb" and options.vpc_cidrs:
        raise InvalidOptionError(f"--vpc-cidr is only read with --routing alb (got --routing {mode})")
    if mode != "gateway" and options.gateway_data_plane_namespaces:
        raise InvalidOptionError(
            f"--gateway-data-plane-namespace is only read with --routing gateway (got --routing {mode})")
    if mode == "alb" and options.network_policy and not options.vpc_cidrs:
        raise InvalidOptionError(
            "--routing alb needs --vpc-cidr CIDR (e.g. 10.0.0.0/16, repeatable): the ALB reaches the pods from "
            "its ENIs in the VPC's subnets, which the NetworkPolicy admits only by CIDR; or --no-network-policy")


def network_policy_values(plan: Plan, options: ValuesOptions) -> NetworkPolicy:
    """The policy the generator writes; call check_network_policy first."""
    namespaces = [options.prometheus_namespace]
    operator = RayOperatorPeers(namespaces=[options.kuberay_namespace] if plan.topology in ON_RAY else [])
    return NetworkPolicy(
        enabled=options.network_policy,
        allowed_namespaces=[n for n in namespaces if n != options.namespace],
        ray_operator=operator,
        alb_source_cidrs=list(options.vpc_cidrs),
        gateway_data_plane_namespaces=list(options.gateway_data_plane_namespaces))

"""charts/vllm-inference's NetworkPolicy, rendered with its defaults, admits what each routing
mode sends to the serving port and refuses the rest (tests/harness/pods.py evaluates the
NetworkPolicy semantics): the ALB's VPC CIDR, the Gateway's data-plane namespace, Prometheus'
namespace on the metrics ports; not a namespace nobody listed, nor an address outside the CIDR."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness import helm
from tests.harness.paths import CHARTS, VALUES
from tests.harness.pods import CreatedPod, created_pods, ingress_admits, selector_matches

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
NAMESPACE = "llm"
SINGLE = VALUES / "qwen2.5-7b-g6-xlarge" / "vllm-inference.yaml"
RAY = VALUES / "llama-3.1-70b-g6e-12xlarge-rayservice" / "vllm-inference.yaml"
CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
VPC = "10.20.0.0/16"
ALB = {"routing.mode": "alb", "routing.alb.certificateArn": CERT, "networkPolicy.albSourceCidrs": [VPC]}
GATEWAY = {"routing.mode": "gateway",
           "routing.gateway.parentRefs": [{"name": "inference-gateway", "namespace": "gateway-system"}],
           "networkPolicy.gatewayDataPlaneNamespaces": ["envoy-gateway-system"]}
ANY_POD = {"app": "client"}


def _rendered(values_file, set_values: dict[str, Any]) -> tuple[list[dict], list[CreatedPod]]:
    objects = helm.render_case(CHART, values_file, set_values, "helm4", "vllm", NAMESPACE)
    return [o for o in objects if o["kind"] == "NetworkPolicy"
            and "epp" not in o["metadata"]["name"]], created_pods(objects)


def _server(policies: list[dict], pods: list[CreatedPod]) -> CreatedPod:
    """A pod serving port 8000 that the policy selects: the Ray head, else the first one."""
    (policy,) = policies
    selected = [p for p in pods if selector_matches(policy["spec"]["podSelector"], p.labels)]
    assert selected, [p.what for p in pods]
    return next((p for p in selected if p.what.endswith(" head")), selected[0])


def test_policy_is_rendered_by_default() -> None:
    objects = helm.render(CHART, namespace=NAMESPACE)
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "NetworkPolicy"] == ["vllm-vllm-inference"]


def test_generated_values_admit_prometheus_to_the_metrics_port_and_no_other_namespace() -> None:
    policies, pods = _rendered(SINGLE, {})
    server = _server(policies, pods)
    assert policies, "the generated values render the NetworkPolicy"
    assert ingress_admits(policies, server, 8000, "monitoring", {"app.kubernetes.io/name": "prometheus"})
    assert not ingress_admits(policies, server, 8000, "elsewhere", ANY_POD)


OPERATOR = {"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator"}


def test_only_the_kuberay_operator_reaches_the_ray_dashboard() -> None:
    """The dashboard (8265) runs Jobs API submissions and Serve deployments: the operator's pods
    reach it; other pods of its namespace, pods of the release namespace that are not Ray pods
    (the helm test, any workload there), Prometheus' namespace and the dashboard agent port from
    outside the release do not. Ray pods of the release still reach each other on any port."""
    policies, pods = _rendered(RAY, {})
    head = next(p for p in pods if p.what.endswith(" head"))
    worker = next(p for p in pods if p is not head and p.what.startswith(head.what.split(" ")[0]))
    assert ingress_admits(policies, head, 8265, "ray-system", OPERATOR)
    assert not ingress_admits(policies, head, 8265, "ray-system", ANY_POD)
    assert not ingress_admits(policies, head, 8265, NAMESPACE, ANY_POD)
    assert not ingress_admits(policies, head, 8265, "monitoring", {"app.kubernetes.io/name": "prometheus"})
    assert not ingress_admits(policies, head, 8265, "elsewhere", OPERATOR)
    for port in (52365, 6379, 10001):
        assert not ingress_admits(policies, head, port, "ray-system", OPERATOR), port
        assert not ingress_admits(policies, head, port, NAMESPACE, ANY_POD), port
        assert ingress_admits(policies, head, port, NAMESPACE, worker.labels), port
    assert ingress_admits(policies, head, 8000, NAMESPACE, ANY_POD)
    assert ingress_admits(policies, head, 8080, "monitoring", {"app.kubernetes.io/name": "prometheus"})


def test_the_operators_pod_labels_can_be_cleared_to_admit_its_whole_namespace() -> None:
    """null removes the default labels (Helm merges an empty map with the chart's default map)."""
    policies, pods = _rendered(RAY, {"networkPolicy.rayOperator.podLabels": None})
    head = next(p for p in pods if p.what.endswith(" head"))
    assert ingress_admits(policies, head, 8265, "ray-system", ANY_POD)
    assert not ingress_admits(policies, head, 8265, NAMESPACE, ANY_POD)


@pytest.mark.parametrize("values_file", [SINGLE, RAY], ids=["single-node", "ray-serve"])
def test_alb_cidr_is_admitted_to_the_serving_port_and_an_address_outside_is_refused(values_file) -> None:
    policies, pods = _rendered(values_file, ALB)
    server = _server(policies, pods)
    assert ingress_admits(policies, server, 8000, "", {}, source_ip="10.20.3.7")
    assert not ingress_admits(policies, server, 8000, "", {}, source_ip="10.21.0.5")
    assert not ingress_admits(policies, server, 9999, "", {}, source_ip="10.20.3.7")


def test_gateway_data_plane_namespace_is_admitted_beside_the_parent_refs() -> None:
    policies, pods = _rendered(SINGLE, GATEWAY)
    server = _server(policies, pods)
    proxy = {"app.kubernetes.io/name": "envoy"}
    assert ingress_admits(policies, server, 8000, "envoy-gateway-system", proxy)
    assert ingress_admits(policies, server, 8000, "gateway-system", proxy)
    assert not ingress_admits(policies, server, 8000, "elsewhere", proxy)


def test_alb_without_source_cidrs_is_refused_naming_the_key() -> None:
    with pytest.raises(helm.HelmError, match="networkPolicy.albSourceCidrs"):
        helm.render(CHART, namespace=NAMESPACE,
                    set_values={"routing.mode": "alb", "routing.alb.certificateArn": CERT})

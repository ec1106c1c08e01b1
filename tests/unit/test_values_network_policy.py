"""charts/vllm-inference's networkPolicy built from a Plan and the options (pure Python; the
rendered policy is evaluated in tests/render/test_network_policy_routing.py)."""

from __future__ import annotations

import pytest

from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.options import ValuesOptions
from vllm_eks.values.vllm_inference.chart import build_values
from vllm_eks.values.vllm_inference.network_policy_build import check_network_policy, network_policy_values

CERT = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d"


@pytest.fixture(scope="module")
def single():
    return make_plan(PlanRequest(model="qwen2.5-7b-instruct", instance="g6.xlarge"))


@pytest.fixture(scope="module")
def ray():
    return make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="g6e.12xlarge", topology="ray-serve"))


def test_policy_is_on_and_admits_prometheus(single) -> None:
    np = build_values(single, ValuesOptions()).network_policy
    assert np.enabled and np.allowed_namespaces == ["monitoring"]
    assert np.alb_source_cidrs == [] and np.gateway_data_plane_namespaces == []


def test_ray_topologies_admit_the_kuberay_operator_to_the_dashboard_only(ray, single) -> None:
    """The operator's namespace goes to rayOperator (the dashboard's only peer), not to the
    namespaces admitted to the serving and metrics ports."""
    np = network_policy_values(ray, ValuesOptions(prometheus_namespace="prom", kuberay_namespace="kuberay-system"))
    assert np.allowed_namespaces == ["prom"]
    assert np.ray_operator.namespaces == ["kuberay-system"]
    assert np.ray_operator.pod_labels == {"app.kubernetes.io/name": "kuberay-operator"}
    assert network_policy_values(single, ValuesOptions()).ray_operator.namespaces == []


def test_the_release_namespace_is_not_listed_twice(ray) -> None:
    np = network_policy_values(ray, ValuesOptions(namespace="llm", prometheus_namespace="llm"))
    assert np.allowed_namespaces == []
    # the operator in the release namespace: still only its pods, by their labels
    np = network_policy_values(ray, ValuesOptions(namespace="llm", kuberay_namespace="llm"))
    assert np.ray_operator.namespaces == ["llm"]


def test_alb_cidrs_and_gateway_data_plane_reach_the_values(single) -> None:
    alb = build_values(single, ValuesOptions(routing="alb", alb_certificate_arn=CERT,
                                             vpc_cidrs=["10.0.0.0/16", "fd00:10::/56"])).network_policy
    assert alb.alb_source_cidrs == ["10.0.0.0/16", "fd00:10::/56"]
    gw = build_values(single, ValuesOptions(routing="gateway", gateway_name="gw",
                                            gateway_data_plane_namespaces=["envoy-gateway-system"])).network_policy
    assert gw.gateway_data_plane_namespaces == ["envoy-gateway-system"]


def test_off_switch_writes_a_disabled_policy_and_lets_alb_go_without_cidr(single) -> None:
    options = ValuesOptions(routing="alb", alb_certificate_arn=CERT, network_policy=False)
    check_network_policy(single, options)
    assert not network_policy_values(single, options).enabled


def test_alb_without_cidr_is_refused_naming_the_flag(single) -> None:
    with pytest.raises(InvalidOptionError, match="--vpc-cidr"):
        check_network_policy(single, ValuesOptions(routing="alb", alb_certificate_arn=CERT))

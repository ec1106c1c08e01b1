"""routing.gateway.provider: the objects a Gateway implementation needs besides the Gateway API
ones. istio gets a DestinationRule that makes the gateway speak TLS to the picker's
--secure-serving ext-proc port (as GIE v1.5.0's inferencepool chart does for provider.name
istio); every other provider gets none.

The DestinationRule CRD is not among the pinned CRDs (VLLM_EKS_CRD_DIR), so the strict
validation cannot check it: the rule is checked here structurally (the fields Istio reads, no
others), and every other object still goes through validate_all."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness import KUBE_VERSIONS, helm, validate_all
from tests.render.test_routing_render import CHART, GATEWAY, NAMESPACE, PICKER, RELEASE, SINGLE, find, one

pytestmark = pytest.mark.render

ISTIO = {**GATEWAY, "routing.gateway.provider": "istio"}
DESTINATION_RULE = ("networking.istio.io/v1beta1", "DestinationRule")
# The DestinationRule fields this chart renders (istio/api networking/v1beta1/destination_rule.proto).
RULE_KEYS = {"apiVersion", "kind", "metadata", "spec"}
SPEC_KEYS = {"host", "trafficPolicy"}


def rendered(set_values: dict[str, Any], helm_version: str = "helm4") -> list[dict[str, Any]]:
    return helm.render_case(CHART, SINGLE, set_values, helm_version, RELEASE, NAMESPACE)


def rules(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "DestinationRule"]


def check_destination_rule(rule: dict[str, Any]) -> None:
    """The structure Istio accepts for the fields rendered: no CRD is pinned for it."""
    assert (rule["apiVersion"], rule["kind"]) == DESTINATION_RULE
    assert set(rule) == RULE_KEYS, set(rule)
    assert set(rule["spec"]) == SPEC_KEYS, set(rule["spec"])
    assert set(rule["spec"]["trafficPolicy"]) == {"tls"}
    assert rule["spec"]["trafficPolicy"]["tls"] == {"mode": "SIMPLE", "insecureSkipVerify": True}


def test_istio_renders_a_tls_destination_rule_for_the_picker_service(crd_registry) -> None:
    objects = rendered(ISTIO)
    (rule,) = rules(objects)
    check_destination_rule(rule)
    service = one(objects, "Service", PICKER)
    # the host is the picker Service's cluster-local name, in the Service's namespace
    assert rule["spec"]["host"] == (
        f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc.cluster.local")
    assert rule["metadata"]["namespace"] == service["metadata"]["namespace"] == NAMESPACE
    assert rule["metadata"]["labels"] == service["metadata"]["labels"]
    # everything else still passes the strict validation; the rule itself has no pinned schema
    others = [o for o in objects if o is not rule]
    for kube_version in KUBE_VERSIONS:
        assert validate_all(others, crd_registry, kube_version).total == len(others)


def test_the_rule_is_refused_by_the_strict_validation_not_passed_silently(crd_registry) -> None:
    (rule,) = rules(rendered(ISTIO))
    report = validate_all([rule], crd_registry, raise_on_error=False)
    assert not report.ok and "DestinationRule" in report.errors[0]


@pytest.mark.parametrize("set_values", [
    GATEWAY, {**GATEWAY, "routing.gateway.provider": "none"},
    {**ISTIO, "routing.gateway.picker.secureServing": False},
    {"routing.gateway.provider": "istio"},
], ids=["default", "none", "istio-plain-grpc", "istio-service-mode"])
def test_no_destination_rule_without_istio_and_tls(set_values: dict[str, Any]) -> None:
    objects = rendered(set_values)
    assert not rules(objects)
    assert bool(find(objects, "InferencePool")) == (set_values.get("routing.mode") == "gateway")


def test_helm3_and_helm4_render_the_same_rule() -> None:
    assert rules(rendered(ISTIO, "helm3")) == rules(rendered(ISTIO, "helm4"))


def test_picker_service_keeps_app_protocol_http2_for_every_provider() -> None:
    for provider in ("none", "istio"):
        service = one(rendered({**GATEWAY, "routing.gateway.provider": provider}), "Service", PICKER)
        ports = {p["name"]: p.get("appProtocol") for p in service["spec"]["ports"]}
        assert ports["grpc-ext-proc"] == "http2", (provider, ports)

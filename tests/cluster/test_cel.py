"""What only the API server sees: the CEL rules (x-kubernetes-validations) of the pinned
Karpenter CRDs. Each case takes an object the gpu-infra chart renders, changes one thing, shows
that the offline strict schema check (generator/vllm_eks/verify/crd_schema.py) still accepts it, and that the
real kube-apiserver rejects it with the rule's message."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import DynamicApiError

from tests.cluster import scenarios
from tests.cluster.kube import Cluster
from tests.cluster.shapes import render_scenario_chart
from tests.harness import crd_schema

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]


def _rendered(kind: str) -> Obj:
    for s in scenarios.discover():
        for o in render_scenario_chart(s, "gpu-infra"):
            if o.get("kind") == kind:
                return o
    raise AssertionError(f"no committed scenario renders a {kind} with charts/gpu-infra")


def _budget_schedule_without_duration(o: Obj) -> None:
    o["spec"].setdefault("disruption", {})["budgets"] = [{"nodes": "1", "schedule": "0 9 * * 1-5"}]


def _in_requirement_without_values(o: Obj) -> None:
    o["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": []})


def _restricted_template_label(o: Obj) -> None:
    o["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})["karpenter.sh/nodepool"] = "mine"


def _static_pool_keeps_weight(o: Obj) -> None:
    # A user turning our pool static (fixed replicas) keeps the weight the chart sets.
    o["spec"]["replicas"] = 2
    o["spec"]["weight"] = o["spec"].get("weight", 10)
    o["spec"].pop("limits", None)


def _alias_with_another_term(o: Obj) -> None:
    terms = o["spec"]["amiSelectorTerms"]
    assert any("alias" in t for t in terms), f"expected an alias term: {terms}"
    terms.append({"id": "ami-0123456789abcdef0"})


def _unsupported_ami_family(o: Obj) -> None:
    o["spec"]["amiSelectorTerms"] = [{"alias": "ubuntu@v20260903"}]


def _image_gc_thresholds_inverted(o: Obj) -> None:
    o["spec"].setdefault("kubelet", {}).update(imageGCHighThresholdPercent=50, imageGCLowThresholdPercent=60)


CASES: dict[str, tuple[str, Callable[[Obj], None], str]] = {
    "nodepool-budget-schedule-without-duration": (
        "NodePool", _budget_schedule_without_duration, "'schedule' must be set with 'duration'"),
    "nodepool-in-requirement-without-values": (
        "NodePool", _in_requirement_without_values, "requirements with operator 'In' must have a value defined"),
    "nodepool-restricted-template-label": (
        "NodePool", _restricted_template_label, 'label "karpenter.sh/nodepool" is restricted'),
    "nodepool-static-with-weight": (
        "NodePool", _static_pool_keeps_weight, "'weight' is not supported on static NodePools"),
    "ec2nodeclass-alias-with-another-term": (
        "EC2NodeClass", _alias_with_another_term, "'alias' is mutually exclusive"),
    "ec2nodeclass-unsupported-ami-family": (
        "EC2NodeClass", _unsupported_ami_family, "family is not supported"),
    "ec2nodeclass-image-gc-thresholds-inverted": (
        "EC2NodeClass", _image_gc_thresholds_inverted,
        "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"),
}


def _reject_message(cluster: Cluster, obj: Obj) -> str | None:
    try:
        # Server-side dry run: full admission and validation, nothing stored.
        cluster.resource(obj["apiVersion"], obj["kind"]).create(body=obj, dry_run="All")
    except DynamicApiError as exc:
        assert exc.status == 422, f"expected 422 Invalid, got {exc.status}: {exc.summary()}"
        return exc.summary()
    return None


def test_rendered_pool_objects_are_accepted(cluster: Cluster) -> None:
    for kind in ("NodePool", "EC2NodeClass"):
        obj = _rendered(kind)
        assert _reject_message(cluster, obj) is None, f"the rendered {kind} itself is rejected"


@pytest.mark.parametrize("case", sorted(CASES))
def test_api_server_rejects_what_schema_accepts(cluster: Cluster, case: str) -> None:
    kind, mutate, message = CASES[case]
    obj = copy.deepcopy(_rendered(kind))
    mutate(obj)
    # Offline: the strict structural-schema check passes (it cannot evaluate CEL).
    crd_schema.validate(obj, crd_schema.load_crds())
    # Online: the API server evaluates the CRD's x-kubernetes-validations and refuses it.
    got = _reject_message(cluster, obj)
    assert got is not None, f"{case}: the API server accepted the object"
    assert message in got, got
    cluster.stats.rejections_shown += 1
    print(f"{case}: {got}")


def test_nodepool_cannot_turn_static_on_upgrade(cluster: Cluster) -> None:
    """A transition rule (oldSelf): fine on create, refused as an update of a stored NodePool,
    the way a `helm upgrade` that sets replicas on an existing pool would be."""
    obj = copy.deepcopy(_rendered("NodePool"))
    obj["metadata"]["name"] = "cel-transition"
    res = cluster.resource(obj["apiVersion"], obj["kind"])
    res.create(body=obj)
    try:
        stored = res.get(name="cel-transition").to_dict()
        stored["spec"]["replicas"] = 1
        stored["spec"].pop("weight", None)
        stored["spec"].pop("limits", None)
        # As a new object this spec is valid...
        fresh = copy.deepcopy(stored)
        fresh["metadata"] = {"name": "cel-transition-fresh"}
        fresh.pop("status", None)
        assert _reject_message(cluster, fresh) is None
        # ...as an update of the dynamic pool it is not.
        with pytest.raises(DynamicApiError) as err:
            res.replace(body=stored)
        assert err.value.status == 422
        assert "Cannot transition NodePool between static" in err.value.summary(), err.value.summary()
        cluster.stats.rejections_shown += 1
    finally:
        res.delete(name="cel-transition")

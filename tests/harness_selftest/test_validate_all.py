"""validate_all: dispatch to built-in or CRD schemas, count per kind, no object unvalidated."""

from __future__ import annotations

import pytest

from tests.harness import CrdRegistry, ValidationFailed, validate_all

from .test_crd_schema import leaderworkerset, nodepool
from .test_k8s_schema import deployment


def test_counts_per_kind(crd_registry: CrdRegistry, kube_version: str) -> None:
    objects = [deployment(), deployment(), leaderworkerset(), nodepool(),
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}]
    objects[1]["metadata"]["name"] = "vllm-2"
    report = validate_all(objects, crd_registry, kube_version)
    assert report.ok and report.total == 5
    assert report.builtin == {"Deployment": 2, "ConfigMap": 1}
    assert report.custom == {"LeaderWorkerSet": 1, "NodePool": 1}
    assert f"Kubernetes {kube_version}: 5 objects valid" in report.summary()


def test_unknown_kind_is_an_error(crd_registry: CrdRegistry) -> None:
    thing = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}
    with pytest.raises(ValidationFailed, match=r"(?s)Widget/w .*no schema for example\.com/v1 Widget"):
        validate_all([deployment(), thing], crd_registry, "1.33")


def test_all_errors_are_collected(crd_registry: CrdRegistry) -> None:
    bad_deploy = deployment()
    bad_deploy["spec"]["paused"] = "yes"
    bad_pool = nodepool()
    bad_pool["spec"]["weight"] = "high"
    report = validate_all([bad_deploy, bad_pool, deployment()], crd_registry, "1.33",
                          raise_on_error=False)
    assert not report.ok and len(report.errors) == 2
    assert report.total == 1
    text = report.failure_text()
    assert "Deployment/vllm" in text and "spec.paused" in text
    assert "NodePool/gpu-p5" in text and "spec.weight" in text


def test_object_without_kind_is_an_error(crd_registry: CrdRegistry) -> None:
    with pytest.raises(ValidationFailed, match="no schema"):
        validate_all([{"metadata": {"name": "x"}}], crd_registry, "1.33")

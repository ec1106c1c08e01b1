"""k8s_schema: strict validation of built-in kinds for every supported Kubernetes minor."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from tests.harness import k8s_schema
from vllm_eks.verify.errors import NoSchemaError, SchemaError


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "vllm", "namespace": "serving",
                     "labels": {"app.kubernetes.io/name": "vllm-inference"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "vllm-inference"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "vllm-inference"}},
                "spec": {
                    "containers": [{
                        "name": "vllm",
                        "image": "vllm/vllm-openai:v0.10.0",
                        "ports": [{"name": "http", "containerPort": 8000}],
                        "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "32Gi", "cpu": "3500m"}},
                        "startupProbe": {"httpGet": {"path": "/health", "port": "http"},
                                         "failureThreshold": 60},
                    }],
                    "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
                },
            },
        },
    }


def test_valid_deployment_passes(kube_version: str) -> None:
    k8s_schema.validate(deployment(), kube_version)


def test_unknown_field_is_rejected(kube_version: str) -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["gpuCount"] = 1
    with pytest.raises(SchemaError) as info:
        k8s_schema.validate(obj, kube_version)
    msg = str(info.value)
    assert "Deployment/vllm" in msg and f"Kubernetes {kube_version}" in msg
    assert "spec.template.spec.containers[0].gpuCount: unknown field" in msg


def test_kubernetes_validate_itself_agrees_on_unknown_field(kube_version: str) -> None:
    # The cached validators must be at least as strict as kubernetes-validate's own entry point.
    obj = deployment()
    obj["spec"]["strategy"] = {"type": "Recreate", "maxSurge": 1}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(obj, kube_version, strict=True)
    with pytest.raises(SchemaError, match=r"spec\.strategy\.maxSurge: unknown field"):
        k8s_schema.validate(obj, kube_version)
    kubernetes_validate.validate(deployment(), kube_version, strict=True)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda o: o["spec"].__setitem__("replicas", "2"), r"spec\.replicas: '2' is not of type"),
        (lambda o: o["spec"].__setitem__("replicas", 2**40), r"spec\.replicas: .*int32"),
        (lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
         .__setitem__("memory", "32 GB"), r"limits\.memory: '32 GB'"),
        (lambda o: o["spec"]["template"]["spec"]["volumes"][0]["emptyDir"]
         .__setitem__("sizeLimit", "8GiB"), r"sizeLimit: '8GiB'"),
        (lambda o: o["metadata"]["labels"].__setitem__("helm.sh/chart", "vllm-0.1.0+abc"),
         r"metadata\.labels\['helm\.sh/chart'\]: value 'vllm-0\.1\.0\+abc'"),
        (lambda o: o["metadata"].__setitem__("name", "VLLM_Server"), r"metadata\.name 'VLLM_Server'"),
        (lambda o: o["spec"]["template"]["spec"]["containers"].append(
            copy.deepcopy(o["spec"]["template"]["spec"]["containers"][0])),
         r"containers\[1\]: duplicate entries for list-map key \[name=\"vllm\"\]"),
        (lambda o: o["spec"]["template"]["spec"]["containers"][0].pop("name"),
         r"'name' is a required property"),
    ],
    ids=["string-replicas", "int32-overflow", "bad-quantity", "bad-size-limit", "bad-label-value",
         "bad-name", "duplicate-container", "missing-container-name"],
)
def test_invalid_values_are_rejected(mutate, expected: str) -> None:  # noqa: ANN001
    obj = deployment()
    mutate(obj)
    with pytest.raises(SchemaError, match=expected):
        k8s_schema.validate(obj, "1.33")


def test_removed_api_version_has_no_schema() -> None:
    pdb = {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "vllm"}, "spec": {"maxUnavailable": 1}}
    assert not k8s_schema.has_schema("policy/v1beta1", "PodDisruptionBudget", "1.33")
    with pytest.raises(NoSchemaError, match="no built-in kind PodDisruptionBudget in policy/v1beta1"):
        k8s_schema.validate(pdb, "1.33")
    pdb["apiVersion"] = "policy/v1"
    k8s_schema.validate(pdb, "1.33")


def test_group_with_builtin_short_name_is_not_builtin() -> None:
    # kubernetes-validate's file names drop the group's domain: apps.example.com/v1 must not
    # be taken for apps/v1.
    assert k8s_schema.has_schema("apps/v1", "Deployment", "1.33")
    assert not k8s_schema.has_schema("apps.example.com/v1", "Deployment", "1.33")


def test_unsupported_kube_version_is_a_clear_error() -> None:
    with pytest.raises(k8s_schema.KubeVersionError, match="no strict schemas for Kubernetes 1.99"):
        k8s_schema.validate(deployment(), "1.99")

"""Checks every render test of a values case makes: the objects validate strictly for every
Kubernetes minor, and every pod template passes Pod Security restricted."""

from __future__ import annotations

from typing import Any

from tests.harness import KUBE_VERSIONS, pod_security, validate_all


def assert_valid_for_every_minor(objects: list[dict[str, Any]], crd_registry) -> None:
    for kube_version in KUBE_VERSIONS:
        report = validate_all(objects, crd_registry, kube_version)
        assert report.total == len(objects)


def restricted_problems(objects: list[dict[str, Any]]) -> list[str]:
    """One line per Pod Security restricted violation, naming the pod template."""
    pods = pod_security.rendered_pod_specs(objects)
    return [f"{what}: {v}" for what, spec, ann in pods for v in pod_security.restricted_violations(spec, ann)]

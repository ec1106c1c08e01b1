"""Validate a whole rendered release: built-in kinds and custom resources, nothing skipped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import crd_schema, k8s_schema
from .errors import NoSchemaError, SchemaError, describe


class ValidationFailed(AssertionError):
    """At least one object failed; the message lists every failure."""

    def __init__(self, report: ValidationReport) -> None:
        self.report = report
        super().__init__(report.failure_text())


@dataclass
class ValidationReport:
    kube_version: str
    builtin: Counter[str] = field(default_factory=Counter)  # kind -> objects validated
    custom: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def counts(self) -> Counter[str]:
        return self.builtin + self.custom

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        kinds = ", ".join(f"{k}={n}" for k, n in sorted(self.counts.items()))
        return (f"Kubernetes {self.kube_version}: {self.total} objects valid "
                f"({sum(self.builtin.values())} built-in, {sum(self.custom.values())} custom): {kinds}")

    def failure_text(self) -> str:
        return (f"{len(self.errors)} invalid object(s) for Kubernetes {self.kube_version}:\n"
                + "\n".join(self.errors))


def validate_all(
    objects: Iterable[dict[str, Any]],
    crd_registry: crd_schema.CrdRegistry,
    kube_version: str = "1.33",
    raise_on_error: bool = True,
) -> ValidationReport:
    """Validate every object; CRD-described kinds against the CRD, the rest as built-in kinds.

    An object that neither a CRD nor the Kubernetes minor describes is an error. With
    raise_on_error (the default) any error raises ValidationFailed listing all of them; the
    returned report counts the validated objects per kind.
    """
    report = ValidationReport(kube_version=kube_version)
    for obj in objects:
        if not isinstance(obj, dict):
            report.errors.append(f"not an object: {obj!r:.200}")
            continue
        key = (obj.get("apiVersion"), obj.get("kind"))
        kind = str(obj.get("kind"))
        try:
            if key in crd_registry:
                crd_schema.validate(obj, crd_registry)
                report.custom[kind] += 1
            elif isinstance(key[0], str) and isinstance(key[1], str) and k8s_schema.has_schema(
                key[0], key[1], kube_version
            ):
                k8s_schema.validate(obj, kube_version)
                report.builtin[kind] += 1
            else:
                raise NoSchemaError(
                    obj, f"Kubernetes {kube_version} built-in kinds and CRDs in {crd_registry.directory}",
                    [f"no schema for {key[0]} {key[1]}: neither a built-in kind of Kubernetes "
                     f"{kube_version} nor served by a loaded CRD"],
                )
        except SchemaError as exc:
            report.errors.append(str(exc))
        except Exception as exc:  # a validator crash must name the object too
            report.errors.append(f"{describe(obj)}: validation crashed: {exc!r}")
    if raise_on_error and report.errors:
        raise ValidationFailed(report)
    return report

"""Test harness: render charts with the pinned Helm binaries and validate every object strictly.

Modules: helm (render/lint), k8s_schema (built-in kinds, kubernetes-validate strict schemas),
crd_schema (custom resources against pinned CRDs), validate (validate_all over a release),
checkov (policy scan), promtool (Prometheus rule checks and unit tests), tools (tool paths).
"""

from .crd_schema import CrdRegistry, load_crds
from .errors import NoSchemaError, SchemaError
from .k8s_schema import KUBE_VERSIONS
from .validate import ValidationFailed, ValidationReport, validate_all

__all__ = [
    "KUBE_VERSIONS",
    "CrdRegistry",
    "NoSchemaError",
    "SchemaError",
    "ValidationFailed",
    "ValidationReport",
    "load_crds",
    "validate_all",
]

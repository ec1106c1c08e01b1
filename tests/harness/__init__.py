"""Test harness: render charts with the pinned Helm binaries and validate every object strictly.

Modules: helm (render/lint), checkov (policy scan), promtool (Prometheus rule checks and unit
tests), tools (tool paths). The strict schema validation is the package's own
(vllm_eks.verify: k8s_schema for built-in kinds, crd_schema for custom resources against the
pinned CRDs, objects.validate_all over a release), the same code `vllm-eks verify` runs; it is
re-exported here under the names the tests use.
"""

import os

from vllm_eks.verify import crd_schema, k8s_schema
from vllm_eks.verify.crd_schema import CrdRegistry, load_crds
from vllm_eks.verify.errors import NoSchemaError, SchemaError
from vllm_eks.verify.k8s_schema import KUBE_VERSIONS
from vllm_eks.verify.objects import ValidationFailed, ValidationReport, validate_all

from .paths import ROOT

# Same default as the Makefile: the shared CRD directory beside the checkout.
os.environ.setdefault(crd_schema.CRD_DIR_ENV, str(ROOT.parent / "shared" / "crds"))

__all__ = [
    "KUBE_VERSIONS",
    "CrdRegistry",
    "NoSchemaError",
    "SchemaError",
    "ValidationFailed",
    "ValidationReport",
    "crd_schema",
    "k8s_schema",
    "load_crds",
    "validate_all",
]

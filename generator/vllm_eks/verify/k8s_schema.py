"""Strict validation of built-in Kubernetes kinds with kubernetes-validate's schemas.

kubernetes-validate ships JSON schemas generated from the OpenAPI document of every Kubernetes
minor, including a "-strict" variant in which every object has `additionalProperties: false`,
which matches `kubectl apply`'s default server-side strict field validation (unknown field ->
error). Its own `validate()` re-reads the 1.4 MB definitions file on every call, so this module
reads the same files once per Kubernetes minor and keeps one compiled validator per kind.

Two definitions are tightened after loading, to match what the API server accepts:
- `Quantity` is any string in the generated schema; here it must match the quantity grammar
  (the same regular expression controller-gen writes into CRDs for resource.Quantity fields,
  e.g. in the pinned LeaderWorkerSet CRD).
- `IntOrString` and `Quantity` use `oneOf` with a nullable type in both branches, which makes a
  null value fail; `anyOf` expresses the intent.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from referencing import Registry, Resource

from . import k8s_meta
from .errors import NoSchemaError, SchemaError, collect
from .formats import FORMAT_CHECKER
from .listmap import StrictValidator

# Kubernetes minors supported by Amazon EKS that the charts are validated against.
KUBE_VERSIONS: list[str] = ["1.31", "1.32", "1.33", "1.34", "1.35"]

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING_DEF = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


class KubeVersionError(ValueError):
    pass


def schema_root() -> Path:
    return Path(str(resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")))


def _version_dir(kube_version: str) -> Path:
    if not re.fullmatch(r"1\.\d+", kube_version):
        raise KubeVersionError(f"kube_version must look like '1.33', got {kube_version!r}")
    path = schema_root() / f"v{kube_version}.0-local-strict"
    if not path.is_dir():
        have = sorted(p.name for p in schema_root().glob("v*-local-strict"))
        raise KubeVersionError(
            f"kubernetes-validate has no strict schemas for Kubernetes {kube_version} "
            f"(looked for {path}; installed: {', '.join(have)}); upgrade kubernetes-validate"
        )
    return path


def check_kube_version(kube_version: str) -> None:
    """Raise KubeVersionError (naming --kube-version) unless kubernetes-validate has the minor."""
    try:
        _version_dir(kube_version)
    except KubeVersionError as e:
        raise KubeVersionError(f"--kube-version: {e}") from None


@cache
def _registry(kube_version: str) -> Registry:
    defs = json.loads((_version_dir(kube_version) / "_definitions.json").read_text())
    table = defs["$defs"]
    table[_QUANTITY_DEF] = {
        "anyOf": [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": "number"}, {"type": "null"}]
    }
    table[_INT_OR_STRING_DEF] = {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}
    return Resource.from_contents(defs) @ Registry()


def _schema_file(api_version: str, kind: str, kube_version: str) -> Path:
    # kubernetes-validate's file naming: group without its domain, '-', version
    # (apps/v1 -> apps-v1, networking.k8s.io/v1 -> networking-v1, v1 -> v1).
    mangled = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return _version_dir(kube_version) / f"{kind.lower()}-{mangled}.json"


@cache
def _validator(api_version: str, kind: str, kube_version: str) -> Any:
    path = _schema_file(api_version, kind, kube_version)
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    group, _, version = api_version.rpartition("/")
    # The file name drops the group's domain, so e.g. a CRD group "apps.example.com" would map
    # onto the built-in apps group: accept the file only if it declares this exact GVK.
    gvks = schema.get("x-kubernetes-group-version-kind") or []
    if not any(g.get("group", "") == group and g.get("version") == version and g.get("kind") == kind
               for g in gvks):
        return None
    return StrictValidator(
        schema, registry=_registry(kube_version), format_checker=FORMAT_CHECKER
    )


def has_schema(api_version: str, kind: str, kube_version: str = "1.33") -> bool:
    """True when apiVersion/kind is a built-in kind served by that Kubernetes minor."""
    return _validator(api_version, kind, kube_version) is not None


def validate(obj: dict[str, Any], kube_version: str = "1.33") -> None:
    """Validate a built-in object strictly; raise SchemaError listing every problem.

    Raises NoSchemaError if the Kubernetes minor has no such apiVersion/kind (e.g. a removed
    beta API).
    """
    against = f"Kubernetes {kube_version} (kubernetes-validate strict)"
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise SchemaError(obj, against, ["apiVersion and kind: required strings"])
    validator = _validator(api_version, kind, kube_version)
    if validator is None:
        raise NoSchemaError(obj, against, [f"no built-in kind {kind} in {api_version} "
                                           f"for Kubernetes {kube_version}"])
    problems = collect(validator, obj) + k8s_meta.metadata_errors(obj)
    if problems:
        raise SchemaError(obj, against, problems)

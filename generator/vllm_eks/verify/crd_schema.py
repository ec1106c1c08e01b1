"""Strict validation of custom resources against the openAPIV3Schema of pinned CRDs.

The CRD schemas are "structural" OpenAPI v3 schemas (apiextensions.k8s.io/v1). The API server
prunes unknown fields and, under strict field validation (kubectl's default), reports them as
errors. A plain JSON-schema validator would accept unknown fields, so every schema is converted:

- an object schema without `x-kubernetes-preserve-unknown-fields: true` and without
  `additionalProperties` gets `additionalProperties: false` (only on the structural path:
  properties / items / additionalProperties; the branches of allOf/anyOf/oneOf/not only add
  value constraints and may list a subset of the properties, so they are left open);
- `x-kubernetes-int-or-string: true` -> type integer or string;
- `nullable: true` -> null allowed; without it null is rejected (the API server would drop the
  field silently, which in a chart is always a bug, so this is stricter on purpose);
- `format: int32/int64/date-time/byte` are checked (vllm_eks.verify.formats);
- a property that is `required` but has a `default` is not required (the API server defaults
  before it validates);
- `x-kubernetes-list-type: set` -> uniqueItems; `map` -> unique keys (vllm_eks.verify.listmap);
- `x-kubernetes-embedded-resource` objects accept apiVersion, kind and metadata;
- the root `metadata` (only `type: object` in every CRD) gets a minimal ObjectMeta schema, and
  the syntax checks of vllm_eks.verify.k8s_meta.
CEL rules (`x-kubernetes-validations`) are not evaluated here: the cluster tier, with a real
kube-apiserver, covers them.

Reference: Kubernetes docs, "Extend the Kubernetes API with CustomResourceDefinitions"
(sections on structural schemas, pruning, defaulting and nullable, int-or-string,
embedded resources, list types) and apiextensions-apiserver's schema/objectmeta handling.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from . import k8s_meta
from .errors import NoSchemaError, SchemaError, collect
from .formats import FORMAT_CHECKER
from .listmap import StrictValidator

CRD_DIR_ENV = "VLLM_EKS_CRD_DIR"

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
METADATA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
    },
}
_EMBEDDED_METADATA: dict[str, Any] = {**METADATA_SCHEMA, "required": []}
_DROPPED_KEYS = {"description", "example", "externalDocs", "nullable"}


class CrdDirError(FileNotFoundError):
    pass


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    t = schema.get("type")
    return t == "object" or (isinstance(t, list) and "object" in t) or "properties" in schema


def to_json_schema(node: Mapping[str, Any], structural: bool = True) -> dict[str, Any]:
    """Convert one structural OpenAPI v3 schema node into a strict JSON schema (see module doc)."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key in ("properties", "patternProperties"):
            out[key] = {k: to_json_schema(v) for k, v in value.items()}
        elif key == "items":
            out[key] = (to_json_schema(value) if isinstance(value, Mapping)
                        else [to_json_schema(v) for v in value])
        elif key == "additionalProperties":
            out[key] = to_json_schema(value) if isinstance(value, Mapping) else value
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [to_json_schema(v, structural=False) for v in value]
        elif key == "not":
            out[key] = to_json_schema(value, structural=False)
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            # OpenAPI 3.0's boolean form; draft 2020-12 takes the bound itself.
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value and bound in node:
                out[key] = node[bound]
        else:
            out[key] = value
    if "exclusiveMinimum" in out and isinstance(node.get("exclusiveMinimum"), bool):
        out.pop("minimum", None)
    if "exclusiveMaximum" in out and isinstance(node.get("exclusiveMaximum"), bool):
        out.pop("maximum", None)

    props = node.get("properties") or {}
    if "required" in out:
        out["required"] = [r for r in out["required"] if "default" not in (props.get(r) or {})]
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    if node.get("x-kubernetes-embedded-resource"):
        embedded = dict(out.get("properties") or {})
        embedded.setdefault("apiVersion", {"type": "string"})
        embedded.setdefault("kind", {"type": "string"})
        embedded.setdefault("metadata", _EMBEDDED_METADATA)
        out["properties"] = embedded
    if node.get("nullable"):
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = [*types, "null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if (structural and _is_object_schema(node)
            and not node.get("x-kubernetes-preserve-unknown-fields")
            and "additionalProperties" not in node):
        out["additionalProperties"] = False
    return out


@dataclass
class CrdVersion:
    """One served version of a CRD, with its strict validator (built on first use)."""

    group: str
    version: str
    kind: str
    scope: str
    crd_name: str
    source: Path
    openapi_schema: dict[str, Any] = field(repr=False)
    storage: bool = False
    _validator: Any = field(default=None, repr=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def validator(self) -> Any:
        if self._validator is None:
            schema = to_json_schema(self.openapi_schema)
            schema.setdefault("properties", {})["metadata"] = METADATA_SCHEMA
            schema.setdefault("required", [])
            for key in ("apiVersion", "kind", "metadata"):
                if key not in schema["required"]:
                    schema["required"].append(key)
            self._validator = StrictValidator(schema, format_checker=FORMAT_CHECKER)
        return self._validator


class CrdRegistry(Mapping[tuple[str, str], CrdVersion]):
    """Served CRD versions keyed by (apiVersion, kind)."""

    def __init__(self, directory: Path, versions: dict[tuple[str, str], CrdVersion]) -> None:
        self.directory = directory
        self._versions = versions

    def __getitem__(self, key: tuple[str, str]) -> CrdVersion:
        return self._versions[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)

    def __repr__(self) -> str:
        return f"CrdRegistry({self.directory}, {len(self)} kinds)"


def crd_dir_from_env() -> Path:
    """$VLLM_EKS_CRD_DIR; unset is an error (the CRDs are pinned files outside the package: the
    Makefile and the test suite default it to ../shared/crds beside a checkout)."""
    value = os.environ.get(CRD_DIR_ENV)
    if not value:
        raise CrdDirError(f"no CRD directory: pass --crds DIR or set {CRD_DIR_ENV} to a directory holding the "
                          "pinned CRDs (tools/crds.lock; `make crds` downloads them into .cache/crds)")
    return Path(value)


def load_crds(crd_dir: str | os.PathLike[str] | None = None) -> CrdRegistry:
    """Every served version of every CRD in *.yaml/*.yml/*.json files of crd_dir.

    crd_dir defaults to $VLLM_EKS_CRD_DIR. A missing or CRD-less
    directory is an error.
    """
    directory = Path(crd_dir) if crd_dir is not None else crd_dir_from_env()
    return _load(str(directory.resolve()))


@cache
def _load(directory: str) -> CrdRegistry:
    path = Path(directory)
    if not path.is_dir():
        raise CrdDirError(
            f"CRD directory {path} does not exist: pass --crds DIR or set {CRD_DIR_ENV} to a directory holding the "
            "pinned CRDs (tools/crds.lock), e.g. run `make crds` and set "
            f"{CRD_DIR_ENV}=$PWD/.cache/crds"
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    versions: dict[tuple[str, str], CrdVersion] = {}
    files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
    for file in files:
        with file.open() as fh:
            docs = list(yaml.load_all(fh, Loader=loader))
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            if doc.get("apiVersion") != "apiextensions.k8s.io/v1":
                raise CrdDirError(f"{file}: only apiextensions.k8s.io/v1 CRDs are supported")
            spec = doc["spec"]
            for v in spec["versions"]:
                if not v.get("served", False):
                    continue
                schema = (v.get("schema") or {}).get("openAPIV3Schema")
                if not schema:
                    raise CrdDirError(f"{file}: version {v['name']} has no openAPIV3Schema")
                entry = CrdVersion(
                    group=spec["group"], version=v["name"], kind=spec["names"]["kind"],
                    scope=spec.get("scope", "Namespaced"), crd_name=doc["metadata"]["name"],
                    source=file, openapi_schema=schema, storage=bool(v.get("storage")),
                )
                key = (entry.api_version, entry.kind)
                if key in versions:
                    raise CrdDirError(f"{key} defined twice: {versions[key].source} and {file}")
                versions[key] = entry
    if not versions:
        raise CrdDirError(f"no CustomResourceDefinition found in {path}")
    return CrdRegistry(path, versions)


def validate(obj: dict[str, Any], registry: CrdRegistry) -> None:
    """Validate a custom resource strictly; raise SchemaError listing every problem.

    Raises NoSchemaError when no loaded CRD serves the object's apiVersion/kind.
    """
    key = (obj.get("apiVersion"), obj.get("kind"))
    entry = registry.get(key)  # type: ignore[arg-type]
    if entry is None:
        served = sorted(f"{a} {k}" for a, k in registry if k == obj.get("kind"))
        hint = f"; served versions of that kind: {', '.join(served)}" if served else ""
        raise NoSchemaError(obj, f"CRDs in {registry.directory}",
                            [f"no CRD serves {key[0]} {key[1]}{hint}"])
    problems = collect(entry.validator, obj) + k8s_meta.metadata_errors(obj)
    if problems:
        raise SchemaError(obj, f"CRD {entry.crd_name} {entry.version} ({entry.source.name})", problems)

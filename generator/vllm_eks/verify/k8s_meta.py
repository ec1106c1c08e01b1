"""Checks on `metadata` that the API server makes for every kind but no JSON schema expresses.

The OpenAPI schemas only say that labels are a map of strings; the API server also checks the
syntax of names, label keys/values and annotation keys (k8s.io/apimachinery
pkg/api/validation/objectmeta.go and pkg/util/validation/validation.go). A chart that renders a
label value longer than 63 characters or with a '+' (e.g. a chart version with build metadata)
passes every schema and fails at install time, so it is checked here.
"""

from __future__ import annotations

import re
from typing import Any

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_DNS1035_LABEL_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# Kinds whose names are validated as path segments only (RBAC allows e.g. "system:foo").
_PATH_SEGMENT_NAME_KINDS = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
# Kinds whose names must be DNS-1035 labels (they become DNS names).
_DNS1035_NAME_KINDS = {"Service"}
_DNS1123_LABEL_NAME_KINDS = {"Namespace"}
_MAX_ANNOTATIONS_BYTES = 256 * 1024


def _qualified_name_errors(key: str, what: str) -> list[str]:
    errors: list[str] = []
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix)):
        errors.append(f"{what} key {key!r}: prefix must be a DNS-1123 subdomain")
    if not name or len(name) > 63 or not _QUALIFIED_NAME_RE.match(name):
        errors.append(
            f"{what} key {key!r}: name part must be 1-63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric"
        )
    return errors


def _name_errors(kind: str, name: Any) -> list[str]:
    if not isinstance(name, str) or not name:
        return ["metadata.name: required (a non-empty string)"]
    if kind in _PATH_SEGMENT_NAME_KINDS:
        if name in (".", "..") or "/" in name or "%" in name:
            return [f"metadata.name {name!r}: must not be '.' or '..' or contain '/' or '%'"]
        return []
    if kind in _DNS1035_NAME_KINDS:
        if len(name) > 63 or not _DNS1035_LABEL_RE.match(name):
            return [f"metadata.name {name!r}: a {kind} name must be a DNS-1035 label "
                    "(<=63 chars, lowercase alphanumeric or '-', starting with a letter)"]
        return []
    if kind in _DNS1123_LABEL_NAME_KINDS:
        if len(name) > 63 or not re.match(rf"^{_DNS1123_LABEL}$", name):
            return [f"metadata.name {name!r}: a {kind} name must be a DNS-1123 label"]
        return []
    if len(name) > 253 or not _DNS1123_SUBDOMAIN_RE.match(name):
        return [f"metadata.name {name!r}: must be a DNS-1123 subdomain "
                "(<=253 chars, lowercase alphanumeric, '-' or '.')"]
    return []


def labels_errors(labels: Any, where: str) -> list[str]:
    """Errors for a label map (metadata.labels, or a selector's matchLabels)."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [f"{where}: must be a map of string to string"]
    errors: list[str] = []
    for key, value in labels.items():
        errors += [f"{where}: {e}" for e in _qualified_name_errors(str(key), "label")]
        if not isinstance(value, str):
            errors.append(f"{where}[{key!r}]: value {value!r} must be a string")
        elif len(value) > 63 or not _LABEL_VALUE_RE.match(value):
            errors.append(
                f"{where}[{key!r}]: value {value!r} must be <=63 characters of [A-Za-z0-9-_.], "
                "starting and ending alphanumeric"
            )
    return errors


def metadata_errors(obj: dict[str, Any]) -> list[str]:
    """Errors in obj['metadata'] that the API server would report; empty when valid."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return ["metadata: required (a map with at least `name`)"]
    kind = str(obj.get("kind", ""))
    errors = _name_errors(kind, meta.get("name"))
    namespace = meta.get("namespace")
    if namespace is not None and (
        not isinstance(namespace, str) or len(namespace) > 63
        or not re.match(rf"^{_DNS1123_LABEL}$", namespace)
    ):
        errors.append(f"metadata.namespace {namespace!r}: must be a DNS-1123 label")
    errors += labels_errors(meta.get("labels"), "metadata.labels")
    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            errors.append("metadata.annotations: must be a map of string to string")
        else:
            size = 0
            for key, value in annotations.items():
                errors += [f"metadata.annotations: {e}"
                           for e in _qualified_name_errors(str(key), "annotation")]
                if not isinstance(value, str):
                    errors.append(f"metadata.annotations[{key!r}]: value {value!r} must be a string")
                else:
                    size += len(str(key)) + len(value.encode())
            if size > _MAX_ANNOTATIONS_BYTES:
                errors.append(f"metadata.annotations: total size {size} B exceeds 256 KiB")
    return errors

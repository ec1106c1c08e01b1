"""A jsonschema validator class that also enforces `x-kubernetes-list-type: map` uniqueness.

Lists marked `x-kubernetes-list-type: map` (containers by name, ports by containerPort and
protocol, ...) must not hold two entries with the same key values. Server-side apply, which
Helm 4 uses by default, rejects such a request ("duplicate entries for key"), so a chart that
renders one works with Helm 3 and breaks with Helm 4. Both the built-in schemas and the CRD
schemas carry the marker, so one validator class serves both.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from jsonschema import ValidationError


def _list_map_keys(validator: Any, keys: list[str], instance: Any, schema: dict[str, Any]):
    if not validator.is_type(instance, "array"):
        return
    item_props = (schema.get("items") or {}).get("properties") or {}
    seen: dict[tuple[str, ...], int] = {}
    for index, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        # A missing key takes its schema default, as the API server defaults before comparing.
        key = tuple(json.dumps(item.get(k, item_props.get(k, {}).get("default")), sort_keys=True)
                    for k in keys)
        if key in seen:
            shown = ", ".join(f"{k}={v}" for k, v in zip(keys, key, strict=True))
            yield ValidationError(
                f"duplicate entries for list-map key [{shown}] (items {seen[key]} and {index}); "
                "server-side apply (Helm 4's default) rejects this",
                path=[index],
            )
        else:
            seen[key] = index


StrictValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"x-kubernetes-list-map-keys": _list_map_keys}
)

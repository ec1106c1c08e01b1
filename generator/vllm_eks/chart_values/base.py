"""What every chart's values model shares: camelCase keys in values.yaml (snake_case in
Python), unknown keys rejected, and the Kubernetes quantity types the schemas check."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..units import OPTIONAL_QUANTITY_PATTERN, QUANTITY_PATTERN

Quantity = Annotated[str, Field(pattern=QUANTITY_PATTERN)]
OptionalQuantity = Annotated[str, Field(pattern=OPTIONAL_QUANTITY_PATTERN)]

# Kubernetes names: a DNS-1123 label (namespaces, Helm releases, label-like names) and a
# DNS-1123 subdomain (most object names).
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
OPTIONAL_DNS1123_SUBDOMAIN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$"


class ValuesModel(BaseModel):
    """camelCase keys in values.yaml, snake_case in Python; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel,
                              protected_namespaces=())

"""An IP network in CIDR notation (a NetworkPolicy ipBlock's cidr), checked twice: the pattern
goes into values.schema.json so the chart refuses a malformed one, and `ipaddress` refuses what
the pattern lets through (octets above 255, host bits set)."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import AfterValidator, Field

CIDR_PATTERN = r"^(([0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}|[0-9a-fA-F:]*:[0-9a-fA-F:.]*/[0-9]{1,3})$"


def _network(value: str) -> str:
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError as err:
        raise ValueError(f"{value} is not an IP network in CIDR notation such as 10.0.0.0/16 ({err})") from None
    return value


Cidr = Annotated[str, Field(pattern=CIDR_PATTERN, max_length=49), AfterValidator(_network)]

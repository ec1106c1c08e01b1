"""Units: byte sizes, Kubernetes resource quantities (the patterns the values schemas accept,
parsing, and the formatting the builders use) and the human form of a byte count."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

KIB = 1024
MIB = 1024**2
GIB = 1024**3
TIB = 1024**4

# Plain decimal number with an optional Kubernetes suffix (binary Ki..Ei, decimal k..E, or the
# milli suffix m). Narrower than the API server's grammar on purpose: no sign, no exponent,
# which keeps typos such as "16GB" or "-1Gi" out of values files.
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
# Same, or empty for "not set".
OPTIONAL_QUANTITY_PATTERN = r"^([0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?)?$"

_BINARY = (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20),
           ("Ki", 1 << 10))
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "K": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
            "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18")}
_FACTORS = {**{s: Decimal(f) for s, f in _BINARY}, **_DECIMAL}
# A number (plain or exponent form) and an optional suffix; the API server's serialised forms.
_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)([a-zA-Z]*)")


def gib(n: float) -> str:
    """A byte count as people read it in a plan: "16.43 GiB"."""
    return f"{n / GIB:.2f} GiB"


def gib_exact(n: float) -> str:
    """A size given in whole or simple GiB, as a constant reads in a formula: "16 GiB"."""
    return f"{n / GIB:g} GiB"


def bytes_quantity(n: int) -> str:
    """Exact binary quantity: the largest binary unit that divides n, else plain bytes."""
    if n < 0:
        raise ValueError(f"byte count must be >= 0, got {n}")
    for suffix, size in _BINARY:
        if n and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def cpu_quantity(millicores: int) -> str:
    """Whole cores when exact ("8"), millicores otherwise ("7500m")."""
    if millicores < 0:
        raise ValueError(f"millicores must be >= 0, got {millicores}")
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes resource quantity in base units (cores, bytes, devices), exactly."""
    if isinstance(value, bool):
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    m = _QUANTITY.fullmatch(str(value).strip())
    if not m or m.group(2) not in _FACTORS:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    try:
        return Decimal(m.group(1)) * _FACTORS[m.group(2)]
    except InvalidOperation as exc:
        raise ValueError(f"not a Kubernetes quantity: {value!r}") from exc


def quantity_bytes(value: Any) -> int:
    """A memory or storage quantity as whole bytes."""
    return int(parse_quantity(value))


def quantity_millicores(value: Any) -> int:
    """A CPU quantity as millicores."""
    return int(parse_quantity(value) * 1000)

"""Kubernetes resource quantities: the pattern the values schemas accept and the formatting
the builders use, so a byte count from the Plan reads as a quantity a person recognises."""

from __future__ import annotations

# Plain decimal number with an optional Kubernetes suffix (binary Ki..Ei, decimal k..E, or the
# milli suffix m). Narrower than the API server's grammar on purpose: no sign, no exponent,
# which keeps typos such as "16GB" or "-1Gi" out of values files.
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
# Same, or empty for "not set".
OPTIONAL_QUANTITY_PATTERN = r"^([0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?)?$"

_BINARY = (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20),
           ("Ki", 1 << 10))


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


_PARSE_UNITS = {"": 1, "m": 0.001, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
                "E": 10**18, **dict(_BINARY)}


def parse_quantity(q: str) -> float:
    """Value of a quantity in base units (bytes or cores); used by tests comparing to the Plan."""
    import re

    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)", q)
    if not m or m.group(2) not in _PARSE_UNITS:
        raise ValueError(f"not a Kubernetes quantity: {q!r}")
    return float(m.group(1)) * _PARSE_UNITS[m.group(2)]

"""Format checks the API server applies to OpenAPI `format` values (k8s.io/kube-openapi strfmt).

jsonschema ignores formats unless a checker is given, and its stock checkers know neither
int32 nor int64; without this a replica count of 2**40 would pass.
"""

from __future__ import annotations

import base64
import binascii
import re

from jsonschema import FormatChecker

FORMAT_CHECKER = FormatChecker(formats=())

_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


def _int_range(bits: int):
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def check(value: object) -> bool:
        # Formats apply only to the matching type; a string is left to the `type` keyword.
        if isinstance(value, bool) or not isinstance(value, int):
            return True
        return low <= value <= high

    return check


FORMAT_CHECKER.checks("int32")(_int_range(32))
FORMAT_CHECKER.checks("int64")(_int_range(64))


@FORMAT_CHECKER.checks("date-time")
def _date_time(value: object) -> bool:
    return not isinstance(value, str) or bool(_RFC3339.match(value))


@FORMAT_CHECKER.checks("byte", raises=(binascii.Error, ValueError))
def _byte(value: object) -> bool:
    if isinstance(value, str):
        base64.b64decode(value, validate=True)
    return True

"""How an error message names a values key, in every spelling the charts' errors use.

Helm 3 prints schema errors as `a.b.0: ...` / `a.b: Additional property c ...`, Helm 4 as
`at '/a/b/0': ...` / `at '/a/b': additional properties 'c' ...`; the charts' validate helpers
print `a.b[0]: ...`. Any of those forms counts as naming the key. A key path is written
`a.b[0].c` (the charts' form)."""

from __future__ import annotations

import re


def key_parts(key: str) -> list[str]:
    """'a.b[0].c' -> ['a', 'b', '0', 'c']."""
    return [p for p in re.split(r"\.|\[(\d+)\]", key) if p]


def forms(key: str) -> set[str]:
    """Ways the helm versions and the validate helpers spell one key path."""
    if not key:
        return {"(root)", "at ''"}
    parts = key_parts(key)
    dotted = ".".join(parts)
    bracketed = "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in parts).lstrip(".")
    return {dotted, bracketed, "/" + "/".join(parts)}


def names_key(message: str, key: str) -> bool:
    """Whether `message` names the values key `key` (as itself, or as an unknown/missing key
    reported on its parent path together with the key's own name)."""
    if any(form in message for form in forms(key)):
        return True
    # unknown key: reported on its parent path (which ends there), with the key's own name
    parent, _, leaf = key.rpartition(".")
    if parent:
        ends = {f"{form}:" for form in forms(parent) if not form.startswith("/")}
        ends |= {f"'{form}'" for form in forms(parent) if form.startswith("/")}
    else:
        ends = {"(root):", "at ''"}
    return any(end in message for end in ends) and re.search(
        rf"(?<![\w-]){re.escape(leaf)}(?![\w-])", message) is not None

"""Generated blocks of a Markdown file: the text between `<!-- BEGIN name -->` and
`<!-- END name -->` is replaced, the markers stay. The README's examples and the calibration
table of docs/calibration-logs.md are written this way (`make docs`)."""

from __future__ import annotations

import re
from collections.abc import Callable


class MissingBlockError(ValueError):
    """The text has no `<!-- BEGIN name -->` ... `<!-- END name -->` block."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no <!-- BEGIN {name} --> block")
        self.name = name


def replace_block(text: str, name: str, make: Callable[[], str]) -> str:
    """text with the block `name` replaced by make()'s output (make runs only when the block exists)."""
    pattern = re.compile(rf"(<!-- BEGIN {name} -->\n).*?(<!-- END {name} -->)", re.S)
    if not pattern.search(text):
        raise MissingBlockError(name)
    return pattern.sub(lambda m: m.group(1) + make() + m.group(2), text)

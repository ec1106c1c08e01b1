"""Lines tests want shown at the end of the session, one section each (tests/conftest.py prints
them after the timings), e.g. how many generated values files rendered and how many were refused."""

from __future__ import annotations

SECTIONS: dict[str, list[str]] = {}


def add(section: str, line: str) -> None:
    SECTIONS.setdefault(section, []).append(line)

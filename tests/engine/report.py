"""Figures the engine tier prints at the end of the run (pytest terminal summary)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class EngineReport:
    started_at: float = field(default_factory=time.monotonic)
    arg_lists: int = 0
    arg_scenarios: set[str] = field(default_factory=set)
    servers: list[tuple[str, float]] = field(default_factory=list)
    sizing: list[tuple[str, bool]] = field(default_factory=list)
    queries: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def server(self, name: str, healthy_after_s: float) -> None:
        self.servers.append((name, healthy_after_s))

    def sizing_case(self, label: str, matched: bool) -> None:
        self.sizing.append((label, matched))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def lines(self) -> list[str]:
        if not (self.arg_lists or self.servers or self.sizing or self.queries or self.notes):
            return []
        out = [f"wall time of the engine tests: {time.monotonic() - self.started_at:.0f} s"]
        if self.arg_lists:
            out.append(f"argument lists parsed by vLLM's parser: {self.arg_lists} "
                       f"(scenarios: {', '.join(sorted(self.arg_scenarios))})")
        if self.servers:
            out.append(f"servers started: {len(self.servers)}")
            out += [f"  {name}: healthy after {secs:.0f} s" for name, secs in self.servers]
        if self.sizing:
            ok = sum(1 for _, m in self.sizing if m)
            out.append(f"sizing cases: {len(self.sizing)}, exact matches: {ok}")
            out += [f"  {'match   ' if m else 'MISMATCH'} {label}" for label, m in self.sizing]
        for kind, n in self.queries.items():
            out.append(f"queries evaluated against Prometheus ({kind}): {n}")
        out += self.notes
        return out


REPORT = EngineReport()

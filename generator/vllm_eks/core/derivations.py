"""Derivations: one line per derived number, written so a person can check it by hand."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Derivation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(description="Plan key this line explains")
    value: str = Field(description="The value, formatted with its unit")
    formula: str = Field(description="How it was computed, with the inputs substituted")
    source: str = Field(default="", description="Why this rule: vLLM behaviour, AWS fact or user pin")


class Derivations:
    """Collects the derivations of one Plan section, in the order they are explained."""

    def __init__(self) -> None:
        self.items: list[Derivation] = []

    def add(self, key: str, value: str, formula: str, source: str = "") -> None:
        self.items.append(Derivation(key=key, value=value, formula=formula, source=source))

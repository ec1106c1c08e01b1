"""Reading a `vllm serve` argument list as (flag, value) pairs.

The Plan's engine_args is a flat list of strings; the vllm-inference chart adds the arguments it
owns (model, served name, port, tensor parallel size, shutdown timeout, load format) from their
own values. The builder uses this module to move those out of the Plan's list, and the render
tests use it to compare a rendered Deployment with the Plan."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A token that starts with "-" followed by a digit is a negative number, i.e. a value.
_NEGATIVE_NUMBER = re.compile(r"^-[0-9.]")


@dataclass(frozen=True)
class Arg:
    """One argument: `flag` is normalised ("--max_model_len" -> "--max-model-len"), `value` is
    None for a bare switch, `positional` marks a leading positional argument (the model)."""

    flag: str
    value: str | None
    positional: bool = False

    def tokens(self) -> list[str]:
        if self.positional:
            return [self.value or ""]
        return [self.flag] if self.value is None else [self.flag, self.value]


def normalise_flag(flag: str) -> str:
    # vLLM's FlexibleArgumentParser accepts underscores in long flag names and treats them as dashes.
    if flag.startswith("--"):
        return "--" + flag[2:].replace("_", "-")
    return flag


def _is_flag(token: str) -> bool:
    return token.startswith("-") and not _NEGATIVE_NUMBER.match(token) and token != "-"


def parse_args(tokens: list[str]) -> list[Arg]:
    """Split a `vllm serve` argument list. `--flag=value` and `--flag value` both give
    Arg(flag, value); a flag followed by another flag (or the end) is a switch."""
    out: list[Arg] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not _is_flag(tok):
            # vLLM's only positional argument is the model (`vllm serve MODEL`).
            out.append(Arg(flag="", value=tok, positional=True))
            i += 1
            continue
        if tok.startswith("--") and "=" in tok:
            flag, value = tok.split("=", 1)
            out.append(Arg(normalise_flag(flag), value))
            i += 1
            continue
        if i + 1 < len(tokens) and not _is_flag(tokens[i + 1]):
            out.append(Arg(normalise_flag(tok), tokens[i + 1]))
            i += 2
            continue
        out.append(Arg(normalise_flag(tok), None))
        i += 1
    return out


def as_dict(args: list[Arg]) -> dict[str, str | None]:
    """flag -> value (last one wins, as argparse does); the positional model under "MODEL"."""
    result: dict[str, str | None] = {}
    for a in args:
        result["MODEL" if a.positional else a.flag] = a.value
    return result

"""Every `--flag` an error message of the package names is a flag of this CLI (or, on an
allow-list, one of vLLM's that a message quotes on purpose), and a validation
error of an internal model is never dressed up as a flag."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click

import vllm_eks
from vllm_eks.cli.main import main

PACKAGE = Path(vllm_eks.__file__).parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
# Flags of other programs that messages name on purpose: `vllm bench serve --save-result`.
OTHER_PROGRAMS = {"--save-result"}


def cli_flags(command: click.Command = main) -> set[str]:
    flags: set[str] = set()
    for param in command.params:
        if isinstance(param, click.Option):
            flags.update(param.opts + param.secondary_opts)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            flags |= cli_flags(sub)
    return flags


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _error_texts(tree: ast.AST) -> list[tuple[int, str]]:
    """The literal text of every raised exception and every `_fail(...)` call."""
    out = []
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_fail":
            target = node
        if target is not None:
            out += [(node.lineno, s) for s in _strings(target)]
    return out


def named_flags() -> dict[str, list[str]]:
    """flag -> the places (file:line) an error message names it."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in _error_texts(ast.parse(path.read_text(), str(path))):
            for flag in FLAG.findall(text):
                found.setdefault(flag, []).append(f"{path.relative_to(PACKAGE)}:{line}")
    return found


def test_the_extraction_finds_flags_of_every_kind():
    found = named_flags()
    assert {"--model", "--instance", "--out", "--vllm", "--knee-min-gain", "--quota", "--save-result"} <= found.keys()


def test_every_flag_an_error_message_names_exists():
    flags = cli_flags()
    unknown = {f: where for f, where in named_flags().items() if f not in flags and f not in OTHER_PROGRAMS}
    assert not unknown, f"error messages name flags no command has: {unknown}"


def test_the_allow_list_holds_no_flag_of_this_cli():
    assert not OTHER_PROGRAMS & cli_flags()


def _validation_error(model, **values):
    from pydantic import ValidationError

    try:
        model(**values)
    except ValidationError as e:
        return e
    raise AssertionError("no validation error")


def test_a_validation_error_of_an_internal_model_names_no_invented_flag():
    from vllm_eks.bench.cost import Price
    from vllm_eks.bench.knee import KneeCriteria
    from vllm_eks.cli.main import _validation_message

    flags = cli_flags()
    cases = [(_validation_error(Price, usd_per_hour=-1, capacity_type="spot", source="x"), "bench"),
             (_validation_error(KneeCriteria, min_gain_pct=float("nan")), "bench"),
             (_validation_error(Price, usd_per_hour=float("nan"), capacity_type="spot", source="x"), "values")]
    for error, command in cases:
        message = _validation_message(error, main.commands[command])
        assert all(f in flags for f in FLAG.findall(message)), message
        assert "field '" in message and error.title in message, message


def test_a_validation_error_of_a_flag_still_names_the_flag():
    from vllm_eks.bench.cost import Price
    from vllm_eks.cli.main import _validation_message

    # `replicas` is a field of no bench model here, but a flag of `bench analyze`: a group's
    # subcommands are searched
    class Replicas(Price):
        replicas: int

    message = _validation_message(_validation_error(Replicas, usd_per_hour=1, capacity_type="spot", source="x",
                                                    replicas="x"), main.commands["bench"])
    assert message.startswith("--replicas:"), message


def test_a_values_model_refusing_a_built_value_names_its_field(cli, tmp_path):
    # --model-source "/models/a b": the staging Job's claim path is checked by its values model
    from tests.unit.cli_result import one_line_error

    err = one_line_error(cli("values", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--stage",
                             "pvc", "--model-source", "/models/a b", "--stage-storage-class", "efs-sc",
                             "--out", str(tmp_path / "s")),
                         "field 'path'", "'a b'")
    assert all(f in cli_flags() for f in FLAG.findall(err)), err

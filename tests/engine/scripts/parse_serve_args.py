"""Parse many `vllm serve` argument lists with vLLM's own parser, in one process.

Runs inside the engine venv. Reads a JSON list of {"id": str, "args": [str, ...],
"local_args": [str, ...] | null} on stdin (`args` = everything after `vllm serve`, model first or
as --model) and prints a JSON list of {"id", "ok", "stage", "exit_code", "error"}.

Two stages: `parse` runs the parser on `args` exactly as rendered (unknown flags, types,
choices); `validate` runs vLLM's pre-load checks on `local_args`, the same list with the paths
that exist only inside the pod (the model, a mounted chat template) pointed at local stand-ins,
because those checks open the files. Importing vLLM takes seconds, so every list of a run is
checked here in one go instead of one process each.

The parser is built the way the `vllm serve` command builds it (vllm/entrypoints/cli/main.py:
a FlexibleArgumentParser with the `serve` subcommand from vllm/entrypoints/cli/serve.py, whose
subparser_init calls vllm.entrypoints.launchers.cli_args.make_arg_parser), then the checks
`vllm serve` runs before loading anything (validate_parsed_serve_args) and the conversion to
AsyncEngineArgs, which applies the engine arguments' own types and validators.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys


def build_parser():
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(prog="vllm")
    subparsers = top.add_subparsers(required=True, dest="subparser")
    ServeSubcommand().subparser_init(subparsers)
    return top


def check(parser, args: list[str], local_args: list[str] | None) -> dict:
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.launchers.cli_args import validate_parsed_serve_args

    stage = "parse"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(["serve", *args])
            if local_args is not None:
                stage = "validate"
                ns = parser.parse_args(["serve", *local_args])
                if getattr(ns, "model_tag", None):
                    ns.model = ns.model_tag  # what ServeSubcommand.cmd does
                validate_parsed_serve_args(ns)
                AsyncEngineArgs.from_cli_args(ns)
    except SystemExit as exc:
        # argparse reports through error() -> exit(2) with the message on stderr.
        return {"ok": False, "stage": stage, "exit_code": exc.code, "error": err.getvalue().strip()}
    except Exception as exc:  # a validator of vLLM rejected a value
        return {"ok": False, "stage": stage, "exit_code": None,
                "error": f"{type(exc).__name__}: {exc}".strip()}
    return {"ok": True, "stage": stage, "exit_code": 0, "error": ""}


def main() -> None:
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # keep vLLM's own prints off the JSON
        parser = build_parser()
        results = [{"id": case["id"], **check(parser, case["args"], case.get("local_args"))} for case in cases]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()

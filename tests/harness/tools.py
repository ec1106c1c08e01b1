"""Where the pinned external tools live, and the error raised when one is missing.

`make setup` installs every tool into `<repo>/.tools/bin` (see mk/tools.mk). VLLM_EKS_TOOLS
points elsewhere when a checkout shares an installed tool directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.harness.paths import ROOT


class ToolMissingError(RuntimeError):
    """A tool the tests need is not installed; the message says how to install it."""


def tools_dir() -> Path:
    return Path(os.environ.get("VLLM_EKS_TOOLS") or ROOT / ".tools")


def tool_path(name: str) -> Path:
    return tools_dir() / "bin" / name


def require_tool(name: str) -> Path:
    """Path of an installed tool, or ToolMissingError telling the user to run `make setup`."""
    path = tool_path(name)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ToolMissingError(
            f"{name} is not installed at {path}: run `make setup` in {ROOT} "
            f"(it installs the pinned helm3/helm4, checkov and promtool into {tools_dir()}/bin)"
        )
    return path

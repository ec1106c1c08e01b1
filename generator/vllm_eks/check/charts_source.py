"""Where `check-fit` finds the charts it renders a values folder with.

An installed wheel carries the three charts inside the package (`vllm_eks/_charts`, copied there
by setup.py when the wheel is built), so `pip install vllm-eks` checks a folder without a
checkout. An editable install from a checkout carries none: there the charts are named with
`--charts` (or VLLM_EKS_CHARTS_DIR, which the Makefile and the test suite set to the checkout's
charts/). Nothing here reaches back into a repository by a relative path."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from vllm_eks.core.errors import VllmEksError

CHARTS = ("gpu-infra", "vllm-inference", "observability")
CHARTS_ENV = "VLLM_EKS_CHARTS_DIR"
BUNDLED = "_charts"


class ChartsNotFoundError(VllmEksError):
    """No folder holding the three charts was given or bundled."""


def bundled_charts() -> Path | None:
    """The charts inside the installed package, or None (an editable install)."""
    folder = resources.files("vllm_eks").joinpath(BUNDLED)
    path = Path(str(folder))
    return path if path.is_dir() else None


def charts_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the charts: `explicit` (--charts), else $VLLM_EKS_CHARTS_DIR, else the
    charts bundled with the package. Every chart must be in it."""
    if explicit is not None:
        return _complete(Path(explicit), "--charts")
    env = os.environ.get(CHARTS_ENV)
    if env:
        return _complete(Path(env), CHARTS_ENV)
    bundled = bundled_charts()
    if bundled is None:
        raise ChartsNotFoundError(
            "no charts to render with: this install of vllm-eks carries none (an editable install from a "
            f"checkout); pass --charts DIR (a checkout's charts/ folder) or set {CHARTS_ENV}, or install the "
            "wheel `make dist` builds, which carries them")
    return _complete(bundled, "the charts bundled with vllm-eks")


def _complete(folder: Path, origin: str) -> Path:
    missing = [c for c in CHARTS if not (folder / c / "Chart.yaml").is_file()]
    if missing:
        raise ChartsNotFoundError(
            f"{origin}: {folder} is not a charts folder: no {', '.join(f'{c}/Chart.yaml' for c in missing)} "
            f"in it (it must hold {', '.join(CHARTS)}, like a checkout's charts/)")
    return folder

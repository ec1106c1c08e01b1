"""Which values folders a `vllm-eks verify DIR` argument names, and how each chart is released.

A values folder is what `vllm-eks values` writes: one values file per chart (gpu-infra.yaml,
vllm-inference.yaml, observability.yaml), beside a plan.json and a README. A folder without any
of them may be a tree of such folders (the project's values/): then every sub-folder that holds
one is checked. A YAML file in a values folder that names no chart is an error, not ignored: a
renamed or misspelt file would otherwise be left out of every check."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllm_eks.core.errors import VllmEksError


@dataclass(frozen=True)
class ChartRelease:
    """How the README installs a chart: release name and namespace (they reach the rendered
    names and selectors, so verify renders with the same)."""

    chart: str
    release: str
    namespace: str

    @property
    def values_file(self) -> str:
        return f"{self.chart}.yaml"


RELEASES = (
    ChartRelease("gpu-infra", "gpu-infra", "gpu-infra"),
    ChartRelease("vllm-inference", "vllm", "llm"),
    ChartRelease("observability", "observability", "llm"),
)
VALUES_FILES = tuple(r.values_file for r in RELEASES)
# Other YAML a values folder may hold without naming a chart (the values tree's scenario list).
NOT_VALUES = ("scenarios.yaml",)


class VerifyInputError(VllmEksError):
    """A DIR argument that is no values folder (nor a tree of them)."""


def _has_values(folder: Path) -> bool:
    return any((folder / name).is_file() for name in VALUES_FILES)


def _unknown_yaml(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()
                  if p.is_file() and p.suffix in (".yaml", ".yml")
                  and p.name not in VALUES_FILES and p.name not in NOT_VALUES)


def values_folders(path: Path) -> list[Path]:
    """The values folders `path` names: itself, or its sub-folders holding values files."""
    if not path.is_dir():
        raise VerifyInputError(f"{path}: no such folder (give a values folder `vllm-eks values` writes, "
                               "or a tree of them like values/)")
    folders = [path] if _has_values(path) else sorted(p for p in path.iterdir() if p.is_dir() and _has_values(p))
    if not folders:
        raise VerifyInputError(f"{path}: no values files in it or in its sub-folders (a values folder holds "
                               f"{', '.join(VALUES_FILES)})")
    for folder in folders:
        unknown = _unknown_yaml(folder)
        if unknown:
            raise VerifyInputError(f"{folder}: {', '.join(unknown)} names no chart (a values folder holds "
                                   f"{', '.join(VALUES_FILES)}; rename the file or move it out)")
    return folders

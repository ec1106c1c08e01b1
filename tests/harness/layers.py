"""The generator's dependency direction: its subpackages are stages of one pipeline, and a module
may import only from its own stage or the stages below it. Read from the source (every import
statement, also those inside functions), so a lazy import cannot hide an upward dependency."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# Lowest first. The package docstring (generator/vllm_eks/__init__.py) draws the same order.
LAYERS = ("core", "spec", "model", "catalog", "memory", "planning", "bench", "recommend", "values",
          "output", "check", "verify", "cli")


@dataclass(frozen=True)
class UpwardImport:
    module: str      # dotted, e.g. vllm_eks.memory.budget
    line: int
    imported: str    # dotted target, e.g. vllm_eks.planning.decisions

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.imported} (a higher stage)"


def _stage(dotted: str, package: str) -> str | None:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == package else None


def _imports(tree: ast.Module, module: str, is_package: bool) -> list[tuple[int, str]]:
    here = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from pkg import name` may name a submodule: check pkg.name when it is a stage.
            found += [(node.lineno, f"{target}.{alias.name}" if target.count(".") == 0 else target)
                      for alias in node.names]
    return found


def upward_imports(package_dir: Path) -> list[UpwardImport]:
    """Every import in the package at package_dir that goes to a higher stage than its own.
    Modules outside a stage (the package's __init__) may import nothing from the stages."""
    package = package_dir.name
    rank = {name: i for i, name in enumerate(LAYERS)}
    problems = []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir.parent).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parts[:-1] if is_package else rel.parts)
        own = _stage(module, package)
        if own is not None and own not in rank:
            problems.append(UpwardImport(module, 1, f"(no stage named {own!r}: add it to LAYERS)"))
            continue
        for line, target in _imports(ast.parse(path.read_text()), module, is_package):
            stage = _stage(target, package)
            if stage is None or stage not in rank:
                continue
            if own is None or rank[stage] > rank[own]:
                problems.append(UpwardImport(module, line, target))
    return problems

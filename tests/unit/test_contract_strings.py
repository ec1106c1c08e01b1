"""One home per contract string: the project's own contract strings (the node label a GPU pool
gives its nodes, the port vLLM listens on, its health path) live in the chart templates only, and
Python tests read them from rendered output (tests/harness/chart_contract.py). Names that belong
to other projects' APIs (Kubernetes, Karpenter, the device plugins, LeaderWorkerSet) may be in
both: vllm_eks.core.contract holds them, and nothing of this project's own."""

from __future__ import annotations

import ast
import re

from tests.harness.paths import CHARTS, GENERATOR_PACKAGE
from vllm_eks.core import contract

GENERATOR = GENERATOR_PACKAGE
TEMPLATES = sorted(p for p in CHARTS.glob("*/templates/**/*") if p.is_file())

# The project's own label domain, and its contract strings as the templates spell them.
PROJECT_LABEL = re.compile(r"vllm-eks\.io/[A-Za-z0-9._-]+")
PROJECT_STRINGS = {"vllm-eks.io/pool", "/health"}
SERVING_PORT = 8000
# A values key may default to the same number: the Service port (service.port) is a values key the
# generator writes, distinct from the container port the templates fix.
VALUES_DEFAULTS = {("values/vllm_inference/pod.py", "Service.port")}
# Label keys, annotation keys and extended resource names: <dns-subdomain>/<name>.
QUALIFIED_NAME = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?\.[a-z]{2,})/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
# Domains of the other projects whose API names the code may use where it needs them.
OTHER_PROJECTS = ("kubernetes.io", "k8s.io", "helm.sh", "karpenter.sh", "k8s.aws", "amazonaws.com", "nvidia.com")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _class_fields(tree: ast.AST) -> dict[int, str]:
    """id of each constant in a class-level annotated assignment -> "Class.field"."""
    out = {}
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef):
            for stmt in cls.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
                    for node in ast.walk(stmt.value):
                        out[id(node)] = f"{cls.name}.{stmt.target.id}"
    return out


def _operands(tree: ast.AST) -> set[int]:
    """Constants that are operands of arithmetic (unit conversions, not names or ports)."""
    return {id(side) for n in ast.walk(tree) if isinstance(n, ast.BinOp) for side in (n.left, n.right)}


def constants(source: str) -> list[tuple[int, object, str]]:
    """(line, value, "Class.field" or "") of every constant in the code, docstrings and
    arithmetic operands left out."""
    tree = ast.parse(source)
    skip, fields = _docstrings(tree) | _operands(tree), _class_fields(tree)
    return [(n.lineno, n.value, fields.get(id(n), "")) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and id(n) not in skip]


def project_definitions(rel: str, source: str) -> list[str]:
    """Where the code defines one of the project's contract strings."""
    found = []
    for line, value, owner in constants(source):
        if isinstance(value, str) and (value in PROJECT_STRINGS or PROJECT_LABEL.fullmatch(value)):
            found.append(f"{rel}:{line}: {value!r}")
        elif type(value) is int and value == SERVING_PORT and (rel, owner) not in VALUES_DEFAULTS:
            found.append(f"{rel}:{line}: {value}")
    return found


def _generator_sources() -> dict[str, str]:
    return {str(p.relative_to(GENERATOR)): p.read_text() for p in sorted(GENERATOR.rglob("*.py"))}


def _template_text() -> str:
    return "\n".join(p.read_text() for p in TEMPLATES)


def test_the_scan_finds_a_definition() -> None:
    code = 'POOL = "vllm-eks.io/pool"\nclass Probe:\n    path: str = "/health"\nPORT = 8000\nGB = MBIT / 8000\n'
    assert sorted(project_definitions("x.py", code)) == ["x.py:1: 'vllm-eks.io/pool'", "x.py:3: '/health'",
                                                         "x.py:4: 8000"]
    assert project_definitions("x.py", 'D = "selects vllm-eks.io/pool on /health at 8000"\n') == [], "prose is fine"


def test_the_templates_hold_the_project_contract_strings() -> None:
    text = _template_text()
    for s in sorted(PROJECT_STRINGS) + [str(SERVING_PORT)]:
        assert s in text, f"{s!r} is no longer in charts/*/templates: update PROJECT_STRINGS"


def test_generator_defines_no_project_contract_string() -> None:
    found = [f for rel, src in _generator_sources().items() for f in project_definitions(rel, src)]
    assert not found, ("project contract strings live in the chart templates only; tests read them from "
                       "rendered output (tests/harness/chart_contract.py):\n" + "\n".join(found))


def _other_projects(name: str) -> bool:
    match = QUALIFIED_NAME.fullmatch(name)
    assert match, name
    domain = match.group(1)
    return any(domain == d or domain.endswith("." + d) for d in OTHER_PROJECTS)


def test_contract_module_holds_other_projects_names_only() -> None:
    well_known = [v for k, v in vars(contract).items() if k.isupper() and isinstance(v, str)]
    assert well_known and all(_other_projects(v) for v in well_known), well_known


def test_names_in_both_python_and_templates_are_other_projects() -> None:
    """A label key, annotation key or resource name both in generator/ and in the templates is
    another project's API name (a new project label would have to live in the templates only)."""
    assert not _other_projects("vllm-eks.io/pool") and _other_projects("karpenter.k8s.aws/instance-gpu-count")
    text = _template_text()
    shared = sorted(f"{rel}:{line}: {value!r}" for rel, src in _generator_sources().items()
                    for line, value, _ in constants(src)
                    if isinstance(value, str) and QUALIFIED_NAME.fullmatch(value) and value in text
                    and not _other_projects(value))
    assert not shared, ("names of this project both in Python and in the templates:\n" + "\n".join(shared))

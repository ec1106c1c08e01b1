"""The generator's stages import only downwards (tests/harness/layers.py), and the check finds an
upward import when there is one."""

from pathlib import Path

from tests.harness.layers import LAYERS, upward_imports
from tests.harness.paths import GENERATOR_PACKAGE


def test_every_generator_import_goes_to_its_own_stage_or_below():
    problems = upward_imports(GENERATOR_PACKAGE)
    assert not problems, "upward imports:\n" + "\n".join(map(str, problems))


def test_every_stage_is_a_subpackage_and_none_is_left_out():
    stages = sorted(p.name for p in GENERATOR_PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert stages == sorted(LAYERS)
    flat = sorted(p.name for p in GENERATOR_PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert flat == [], f"modules outside a stage: {flat}"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "vllm_eks"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_an_upward_import_is_found_absolute_relative_and_lazy(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "", "core/units.py": "from vllm_eks.planning.pools import nodes_for\n",
        "memory/__init__.py": "", "memory/budget.py": "def f():\n    from ..planning import decisions\n",
        "planning/__init__.py": "", "planning/pools.py": "from ..core.units import GIB\n",
        "planning/decisions.py": "from vllm_eks import cli\n",
        "cli/__init__.py": "",
    })
    found = sorted(str(p) for p in upward_imports(root))
    assert found == [
        "vllm_eks.core.units:1 imports vllm_eks.planning.pools (a higher stage)",
        "vllm_eks.memory.budget:2 imports vllm_eks.planning (a higher stage)",
        "vllm_eks.planning.decisions:1 imports vllm_eks.cli (a higher stage)",
    ]


def test_downward_and_same_stage_imports_pass(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "", "core/units.py": "import math\n",
        "planning/__init__.py": "",
        "planning/pools.py": "from ..core.units import GIB\nfrom . import decisions\n",
        "planning/decisions.py": "import vllm_eks.core.units\n",
    })
    assert upward_imports(root) == []


def test_a_subpackage_that_is_no_stage_is_reported(tmp_path):
    root = _package(tmp_path, {"__init__.py": "", "misc/__init__.py": "", "misc/x.py": ""})
    assert any("no stage named 'misc'" in str(p) for p in upward_imports(root))

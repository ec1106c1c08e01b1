"""Every chart's values.schema.json and README values table are what `make schemas` and
`make docs` generate from the pydantic models. The charts are the directories charts/<name>/ with a
Chart.yaml (the Makefile, tools/gen-schemas.py and tools/bench_render.py read them from there); the
generator's chart registry and the cluster tier's install list must name the same charts."""

import re
import subprocess
import sys

from tests.cluster.scenarios import CHARTS as CLUSTER_INSTALL_ORDER
from tests.cluster.shapes import RELEASES as CLUSTER_RELEASES
from tests.harness.paths import ROOT, TOOLS
from vllm_eks.values.registry import CHART_BUILDERS

CHARTS = sorted(p.parent.name for p in (ROOT / "charts").glob("*/Chart.yaml"))


def test_every_chart_has_a_values_builder_and_nothing_else_does():
    assert CHARTS, "no charts/*/Chart.yaml"
    assert sorted(CHART_BUILDERS) == CHARTS


def test_the_cluster_tier_installs_every_chart():
    assert sorted(CLUSTER_INSTALL_ORDER) == CHARTS
    assert sorted(CLUSTER_RELEASES) == CHARTS


def test_no_chart_list_in_the_makefile_or_tools():
    names = "|".join(re.escape(c) for c in CHARTS)
    listed = re.compile(rf"(?:{names})[\"']?[\s,]+[\"']?(?:{names})")
    files = [ROOT / "Makefile", *(ROOT / "mk").glob("*.mk"), *TOOLS.glob("*.py")]
    offenders = [str(f.relative_to(ROOT)) for f in files if listed.search(f.read_text())]
    assert not offenders, f"list the charts from charts/*/Chart.yaml instead: {offenders}"


def test_schemas_and_readme_tables_have_not_drifted():
    for extra in ([], ["--docs"]):
        r = subprocess.run([sys.executable, str(TOOLS / "gen-schemas.py"), "--check", *extra],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr

"""Every chart's values.schema.json and README values table are what `make schemas` and
`make docs` generate from the pydantic models (tools/gen-schemas.py lists the charts)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_chart_is_generated():
    text = (ROOT / "tools" / "gen-schemas.py").read_text()
    for chart in sorted(p.name for p in (ROOT / "charts").iterdir() if (p / "Chart.yaml").exists()):
        assert f'"charts/{chart}"' in text, f"charts/{chart} is missing from tools/gen-schemas.py CHARTS"


def test_schemas_and_readme_tables_have_not_drifted():
    for extra in ([], ["--docs"]):
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen-schemas.py"), "--check", *extra],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr

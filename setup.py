"""Only what pyproject.toml cannot say: the wheel carries the three charts inside the package
(vllm_eks/_charts), so `vllm-eks check-fit` renders with them without a checkout
(generator/vllm_eks/check/charts_source.py). An editable install links the source instead and
carries none; it is given the charts with --charts or VLLM_EKS_CHARTS_DIR."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
CHARTS = ("gpu-infra", "vllm-inference", "observability")
# What a chart folder holds that is not part of the chart (its .helmignore leaves these out of a
# helm package too): scenario values of the chart's own CI and editor leftovers.
NOT_CHART = shutil.ignore_patterns("ci", "__pycache__", "*.swp", "*.bak", "*.tmp", "*~", ".DS_Store")


class BuildPyWithCharts(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "vllm_eks" / "_charts"
        shutil.rmtree(target, ignore_errors=True)
        for chart in CHARTS:
            source = HERE / "charts" / chart
            if not (source / "Chart.yaml").is_file():
                raise SystemExit(f"setup.py: {source}/Chart.yaml is missing; the wheel must carry every chart")
            shutil.copytree(source, target / chart, ignore=NOT_CHART)


setup(cmdclass={"build_py": BuildPyWithCharts})

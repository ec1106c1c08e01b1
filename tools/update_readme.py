"""Regenerate (or --check) the generated blocks of the top-level README: the example
`vllm-eks plan` and `vllm-eks recommend` outputs and the scenario list, all produced by the
tools themselves."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml
from rich.console import Console

from vllm_eks.output import report
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def plan_example() -> str:
    console = Console(width=110, record=True, file=open("/dev/null", "w"))
    console.print(report.summary_table(make_plan(PlanRequest(model="llama-3.1-70b-instruct", instance="p5.48xlarge"))))
    text = console.export_text()
    return "```\n$ vllm-eks plan --model llama-3.1-70b-instruct --instance p5.48xlarge\n" + text + "```\n"


RECOMMEND_ARGS = ["recommend", "--model", "llama-3.1-70b-instruct"]


def recommend_example() -> str:
    """`vllm-eks recommend` as the command prints it."""
    from click.testing import CliRunner

    from vllm_eks.cli.main import main

    result = CliRunner().invoke(main, RECOMMEND_ARGS, catch_exceptions=False)
    if result.exit_code:
        raise SystemExit(f"vllm-eks {' '.join(RECOMMEND_ARGS)} failed: {result.output}")
    text = "\n".join(line.rstrip() for line in result.output.splitlines())
    return f"```\n$ vllm-eks {' '.join(RECOMMEND_ARGS)}\n{text}\n```\n"


def scenario_list() -> str:
    data = yaml.safe_load((ROOT / "values" / "scenarios.yaml").read_text())["scenarios"]
    rows = ["| folder | what | command |", "|---|---|---|"]
    for name, sc in data.items():
        rows.append(f"| [`values/{name}`](values/{name}) | {sc['purpose']} | `vllm-eks values {sc['args']}` |")
    return "\n".join(rows) + "\n"


BLOCKS = {"plan-example": plan_example, "recommend-example": recommend_example, "scenarios": scenario_list}


def render(text: str) -> str:
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- BEGIN {name} -->\n).*?(<!-- END {name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- BEGIN {name} --> block")
        text = pattern.sub(lambda m: m.group(1) + make() + m.group(2), text)
    return text


if __name__ == "__main__":
    current = README.read_text()
    fresh = render(current)
    if "--check" in sys.argv:
        if fresh != current:
            raise SystemExit("README.md generated blocks are stale: run `make docs`")
    else:
        README.write_text(fresh)

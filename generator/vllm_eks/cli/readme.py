"""The generated blocks of the top-level README: the example `vllm-eks plan` and
`vllm-eks recommend` outputs and the scenario list, all produced by the tools themselves
(`make readme`, tools/update_readme.py; the unit tier checks the README is current)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from vllm_eks.cli.main import main
from vllm_eks.cli.scenarios import scenarios
from vllm_eks.output import doc_blocks, report
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest


def plan_example() -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=110, record=True, file=sink)
        console.print(report.summary_table(make_plan(PlanRequest(model="llama-3.1-70b-instruct",
                                                                 instance="p5.48xlarge"))))
        text = console.export_text()
    return "```\n$ vllm-eks plan --model llama-3.1-70b-instruct --instance p5.48xlarge\n" + text + "```\n"


RECOMMEND_ARGS = ["recommend", "--model", "llama-3.1-70b-instruct"]


def recommend_example() -> str:
    """`vllm-eks recommend` as the command prints it."""
    result = CliRunner().invoke(main, RECOMMEND_ARGS, catch_exceptions=False)
    if result.exit_code:
        raise RuntimeError(f"vllm-eks {' '.join(RECOMMEND_ARGS)} failed: {result.output}")
    text = "\n".join(line.rstrip() for line in result.output.splitlines())
    return f"```\n$ vllm-eks {' '.join(RECOMMEND_ARGS)}\n{text}\n```\n"


def scenario_list(scenarios_file: Path) -> str:
    rows = ["| folder | what | command |", "|---|---|---|"]
    for name, sc in scenarios(scenarios_file).items():
        rows.append(f"| [`values/{name}`](values/{name}) | {sc['purpose']} | `vllm-eks values {sc['args']}` |")
    return "\n".join(rows) + "\n"


def blocks(scenarios_file: Path) -> dict[str, Callable[[], str]]:
    return {"plan-example": plan_example, "recommend-example": recommend_example,
            "scenarios": lambda: scenario_list(scenarios_file)}


def render(text: str, scenarios_file: Path) -> str:
    """text (the README) with every generated block made afresh. Raises
    doc_blocks.MissingBlockError naming the first block it lacks."""
    for name, make in blocks(scenarios_file).items():
        text = doc_blocks.replace_block(text, name, make)
    return text

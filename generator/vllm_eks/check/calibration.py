"""The memory model against public vLLM start-up logs: each log's run (model config, GPU total,
TP, engine settings) goes through the same budget arithmetic as a Plan, and the predicted
available KV cache memory is compared with the logged one. The log data lives in
tests/unit/data/calibration_logs.yaml; the unit test and the docs table both read it here."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.catalog.models import model_catalog
from vllm_eks.core.units import GIB
from vllm_eks.memory import budget
from vllm_eks.model.architecture import parse_config
from vllm_eks.output import doc_blocks
from vllm_eks.planning import decisions
from vllm_eks.spec.request import PlanRequest

# vLLM logs GiB with two decimals: a logged figure is +-0.005 GiB.
LOGGED_ROUNDING = 0.005 * GIB


@dataclass(frozen=True)
class Prediction:
    log: dict
    available: int            # the Plan's (cautious) available KV cache bytes per GPU
    expected: int
    optimistic: int
    weights: int              # predicted weight bytes per GPU

    @property
    def logged(self) -> float:
        return self.log["logged"]["available_kv_gib"] * GIB

    @property
    def error(self) -> float:
        """(predicted - logged) / |logged|: negative is the safe side (less KV than the engine had)."""
        return (self.available - self.logged) / abs(self.logged)

    @property
    def refused(self) -> bool:
        """The engine refused to start: it logged a negative KV budget."""
        return self.logged <= 0

    @property
    def bounded(self) -> bool:
        """Counted in the median and held to the 10 % bound."""
        return not self.refused and "outside_bound" not in self.log

    @property
    def weights_error(self) -> float | None:
        w = self.log["logged"].get("weights_gib")
        return None if w is None else (self.weights - w * GIB) / (w * GIB)


def load(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())["logs"]


def _hardware(log: dict):
    hw = instance_catalog()[log["instance"]]
    if "gpu_total_gib" in log:
        hw = replace(hw, gpu_memory_bytes=int(round(log["gpu_total_gib"] * GIB)))
    return hw


def predict(log: dict, logged_weights: bool = False) -> Prediction:
    """The generator's budget for the log's run. With `logged_weights`, the logged weight bytes
    replace the predicted ones (to tell a weight error from an overhead error)."""
    cfg = {**model_catalog()[log["model"]].config, **(log.get("config_overrides") or {})}
    a = parse_config(cfg, f"calibration log {log['id']}")
    p = decisions._precisions(a, PlanRequest(model=log["model"]))
    s = budget.Settings(tp=log["tp"], pp=1, gpu_memory_utilization=log["gpu_memory_utilization"],
                        max_num_batched_tokens=log["max_num_batched_tokens"], max_num_seqs=log["max_num_seqs"],
                        block_size=16, kv_cache_memory_bytes=None, graphs_subtracted=log["graphs_subtracted"])
    st = budget.compute(a, _hardware(log), p, s).stages[0]
    shift = st.weights - int(log["logged"]["weights_gib"] * GIB) if logged_weights else 0
    return Prediction(log, st.available + shift, st.available_expected + shift, st.available_optimistic + shift,
                      st.weights - shift)


def median_abs_error(preds: list[Prediction]) -> float:
    """Median |error| over the logs held to the bound."""
    return statistics.median(abs(p.error) for p in preds if p.bounded)


def _gib(b: float) -> str:
    return f"{b / GIB:.2f}"


def _pct(e: float | None) -> str:
    return "" if e is None else f"{e * 100:+.1f} %"


def table(preds: list[Prediction]) -> str:
    """The markdown table of docs/calibration-logs.md section 3."""
    rows = ["| log | run | vLLM | settings | logged KV GiB | predicted (band) GiB | error | logged weights GiB "
            "| predicted | error | source |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in preds:
        g = p.log
        w = g["logged"].get("weights_gib")
        settings = (f"TP={g['tp']}, util {g['gpu_memory_utilization']}, {g['max_num_batched_tokens']} tokens, "
                    f"{g['max_num_seqs']} seqs, graphs {'subtracted' if g['graphs_subtracted'] else 'not subtracted'}")
        src = f"[link]({g['source']})" if g["source"].startswith("http") else "no URL: " + g["source"].split(" (")[0]
        rows.append(f"| {g['id']} | {g['title']} | {g['vllm']} | {settings} | {g['logged']['available_kv_gib']:.2f} | "
                    f"{_gib(p.available)} ({_gib(p.expected)} / {_gib(p.optimistic)}) | "
                    f"{'refused by both' if p.refused else _pct(p.error)}"
                    f"{'' if p.bounded or p.refused else ' (outside)'} | "
                    f"{'' if w is None else f'{w:.2f}'} | {_gib(p.weights) if w is not None else ''} | "
                    f"{_pct(p.weights_error)} | {src} |")
    bounded = [p for p in preds if p.bounded]
    worst = max(bounded, key=lambda p: p.error)
    rows.append("")
    rows.append(f"{len(preds)} logs, {len(bounded)} held to the bound: median |error| of the planned figure "
                f"{median_abs_error(preds) * 100:.1f} %, largest over-prediction {worst.error * 100:+.1f} % "
                f"(log {worst.log['id']}).")
    for p in preds:
        if p.refused:
            logged = p.log['logged']['available_kv_gib']
            rows.append(f"\n- {p.log['id']}: the engine refused to start (logged {logged} GiB); "
                        f"the plan's budget is {_gib(p.available)} GiB, so it refuses this layout too.")
        elif not p.bounded:
            rows.append(f"\n- {p.log['id']} is outside the bound: {p.log['outside_bound']}.")
    return "\n".join(rows) + "\n"


TABLE_BLOCK = "calibration-table"


def render_doc(text: str, data: Path) -> str:
    """text (docs/calibration-logs.md) with its calibration-table block recomputed from every log
    in data. Raises doc_blocks.MissingBlockError when the block is missing."""
    return doc_blocks.replace_block(text, TABLE_BLOCK,
                                    lambda: table([predict(log) for log in load(data)]))

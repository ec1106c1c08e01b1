"""`plan --json` stays compatible: for every catalog model x instance and the recorded request
variants, every key the baseline release printed is still printed, with the same type and value
(tests/unit/data/plan-baseline.json.gz, written by tools/capture_plan_baseline.py from that
release's code). New keys may appear; a refusal stays a refusal.

Intended changes are listed in CHANGED with the reason; nothing else may differ."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from vllm_eks.errors import VllmEksError
from vllm_eks.planner import make_plan
from vllm_eks.request import PlanRequest

BASELINE = Path(__file__).parent / "data" / "plan-baseline.json.gz"

# key path (e.g. "plan.engine_args") -> why its value may differ from the baseline.
CHANGED: dict[str, str] = {}


def _baseline() -> dict:
    with gzip.open(BASELINE, "rt", encoding="utf-8") as f:
        return json.load(f)


def _current(key: str, variants: dict) -> dict:
    model, instance, variant = key.split("|")
    try:
        plan = make_plan(PlanRequest(model=model, instance=instance, **variants[variant])).json_summary()
    except VllmEksError as exc:
        return {"refused": str(exc)}
    plan["derivations"] = [[d["key"], d["value"]] for d in plan["derivations"]]
    return plan


def _differences(path: str, old, new) -> list[str]:
    if path in CHANGED:
        return []
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{path}: was an object, now {type(new).__name__}"]
        out = []
        for k, v in old.items():
            if k not in new:
                out.append(f"{path}.{k}: missing")
            else:
                out += _differences(f"{path}.{k}", v, new[k])
        return out
    if type(old) is not type(new):
        return [f"{path}: type {type(old).__name__} -> {type(new).__name__}"]
    if old != new:
        return [f"{path}: {old!r} -> {new!r}"]
    return []


def test_baseline_covers_every_catalog_pair():
    doc = _baseline()
    assert len(doc["plans"]) >= 2000
    assert sum("refused" not in p for p in doc["plans"].values()) >= 1500


def test_every_baseline_key_keeps_its_value():
    doc = _baseline()
    problems: list[str] = []
    for key, old in doc["plans"].items():
        new = _current(key, doc["variants"])
        if "refused" in old:
            if "refused" not in new:
                problems.append(f"{key}: was refused ({old['refused'][:80]}), now plans")
            continue
        if "refused" in new:
            problems.append(f"{key}: planned before, now refused: {new['refused']}")
            continue
        problems += [f"{key}: {p}" for p in _differences("plan", old, new)]
    assert not problems, f"{len(problems)} differences, first 20:\n" + "\n".join(problems[:20])

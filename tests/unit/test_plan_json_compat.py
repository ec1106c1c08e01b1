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
from vllm_eks.plan import Plan
from vllm_eks.planner import make_plan
from vllm_eks.request import PlanRequest

BASELINE = Path(__file__).parent / "data" / "plan-baseline.json.gz"



# Tokens whose position (or presence) in engine_args changed, with the number of values each takes.
_MOVED = {"--no-async-scheduling": 0, "--kv-transfer-config": 1}
_DROPPED = {"--distributed-executor-backend": 1}


def _strip(args: list[str], tokens: dict[str, int]) -> tuple[list[str], list[list[str]]]:
    kept, taken, i = [], [], 0
    while i < len(args):
        if args[i] in tokens:
            n = tokens[args[i]]
            taken.append(args[i:i + n + 1])
            i += n + 1
        else:
            kept.append(args[i])
            i += 1
    return kept, taken


def _engine_args_change(old, new) -> bool:
    """engine_args is rendered from the engine settings mapping: the settings come before the
    chart-owned --load-format and --shutdown-timeout, so `--no-async-scheduling` and a phase's
    `--kv-transfer-config` move up; and multi-node plans no longer carry
    `--distributed-executor-backend ray` (how a group's nodes are launched is the chart's
    launcher, not an engine setting). Everything else stays exactly in place."""
    old_rest, old_moved = _strip(old, _MOVED)
    new_rest, new_moved = _strip(new, _MOVED)
    old_rest, dropped = _strip(old_rest, _DROPPED)
    return (old_moved == new_moved and old_rest == new_rest
            and all(d == ["--distributed-executor-backend", "ray"] for d in dropped))


def _same_derivations(old, new) -> bool:
    """Derivations are produced by the section that computes each number, so their order
    follows the sections; the same (key, value) lines must all be there."""
    return sorted(map(tuple, old)) == sorted(map(tuple, new))


# key path -> rule a changed value must satisfy (each rule's docstring says why).
CHANGED = {
    "plan.engine_args": _engine_args_change,
    "plan.prefill.engine_args": _engine_args_change,
    "plan.decode.engine_args": _engine_args_change,
    "plan.derivations": _same_derivations,
}


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
    if path in CHANGED and old != new:
        return [] if CHANGED[path](old, new) else [f"{path}: {old!r} -> {new!r}"]
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


def test_a_plan_json_reads_back_into_the_same_plan():
    for scenario in sorted((Path(__file__).resolve().parents[2] / "values").glob("*/plan.json")):
        summary = json.loads(scenario.read_text())
        again = Plan.from_summary(summary).json_summary()
        summary.pop("derivations"), again.pop("derivations")
        assert again == summary, scenario.parent.name

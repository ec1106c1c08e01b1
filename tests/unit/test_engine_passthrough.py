"""Engine settings that do not change the sizing are declared once, as PlanRequest fields marked
ENGINE_SETTING: the flag, its choices and help come from the field, and the planner copies a given
value into the Plan's engine settings (so into `vllm serve` flags and Ray's engine_kwargs)."""

from __future__ import annotations

import pytest

from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.engine_settings import serve_flags
from vllm_eks.spec.request import PlanRequest


def _plan(**kw):
    return make_plan(PlanRequest(model="qwen2.5-7b", instance="g6.xlarge", **kw))


def test_marked_fields_are_vllm_engine_args_names() -> None:
    marked = [n for n, f in PlanRequest.model_fields.items()
              if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("engine_setting")]
    assert "generation_config" in marked
    # no flag spelling of its own: the flag is vLLM's (--generation-config)
    assert all("flag" not in PlanRequest.model_fields[n].json_schema_extra for n in marked)  # type: ignore[operator]


def test_a_given_setting_reaches_the_engine_and_explain() -> None:
    p = _plan(generation_config="vllm")
    assert p.engine.settings["generation_config"] == "vllm"
    assert serve_flags(p.engine.settings)[-2:] == ["--generation-config", "vllm"]
    why = {d.key: d.formula for d in p.derivations}
    assert "set by --generation-config" in why["generation_config"]


def test_an_unset_setting_leaves_vllm_its_default() -> None:
    assert "generation_config" not in _plan().engine.settings


@pytest.mark.parametrize("topology", ["ray-serve"])
def test_ray_engine_kwargs_carry_it(topology) -> None:
    p = make_plan(PlanRequest(model="qwen2.5-7b", instance="g6.12xlarge", topology=topology,
                              generation_config="auto"))
    assert p.engine.settings["generation_config"] == "auto"


def test_a_bad_choice_names_the_flag(cli) -> None:
    r = cli("plan", "--model", "qwen2.5-7b", "--instance", "g6.xlarge", "--generation-config", "greedy")
    assert r.exit_code == 2 and "--generation-config" in r.output and "'auto', 'vllm'" in r.output
    r = cli("plan", "--model", "qwen2.5-7b", "--instance", "g6.xlarge", "--generation-config", "vllm", "--json")
    assert r.exit_code == 0, r.output
    assert '"--generation-config"' in r.stdout


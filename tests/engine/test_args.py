"""Every argument list a rendered model-server pod passes to `vllm serve` is accepted by vLLM's
own parser at the pinned release; wrong flags and bad values are caught naming the flag."""

from __future__ import annotations

import subprocess

import pytest

from tests.engine import scenarios as sc
from tests.engine.argcheck import parse_all
from tests.engine.cpu import local_paths
from tests.engine.engine_env import EngineVenv
from tests.engine.report import REPORT
from vllm_eks.check.workloads import pod_templates


def _chart_ci_invocations() -> list[sc.ServeInvocation]:
    out = []
    for values in sorted((sc.CHART_VLLM / "ci").glob("*-values.yaml")):
        objects = sc.render_chart(sc.CHART_VLLM, values)
        out += sc.serve_invocations(f"ci/{values.name}", objects)
    return out


def _serve_container(inv: sc.ServeInvocation) -> dict | None:
    for c in inv.pod_spec.get("containers", []):
        if sc.container_serve_args(c) is not None:
            return c
    return None


def test_every_rendered_serve_argument_list_parses(engine: EngineVenv, rendered_scenarios,
                                                   tiny_models) -> None:
    invocations = [inv for name, objects in rendered_scenarios.items()
                   for inv in sc.serve_invocations(name, objects)]
    missing = [name for name, objects in rendered_scenarios.items()
               if not sc.serve_invocations(name, objects)]
    assert not missing, f"scenarios with no model-server pod found: {missing}"
    invocations += _chart_ci_invocations()
    cases = {f"{inv.scenario} :: {inv.where}": list(inv.args) for inv in invocations}
    # Pre-load checks open the model and mounted files: those point at a local stand-in.
    stand_in = tiny_models["llama"]["path"]
    local = {f"{inv.scenario} :: {inv.where}": local_paths(inv.args, tiny_model=stand_in,
                                                           container=_serve_container(inv))
             for inv in invocations}
    results = parse_all(cases, local)
    REPORT.arg_lists += len(cases)
    REPORT.arg_scenarios.update(inv.scenario for inv in invocations)
    failures = [f"{case}\n    args: {' '.join(cases[case])}\n    vLLM ({r.stage}): {r.error}"
                for case, r in results.items() if not r.ok]
    assert not failures, "vLLM rejects rendered arguments:\n" + "\n".join(failures)


@pytest.fixture(scope="module")
def negative_results(engine: EngineVenv, rendered_scenarios) -> dict:
    name, objects = next(iter(rendered_scenarios.items()))
    base = list(sc.serve_invocations(name, objects)[0].args)
    cases = {
        "engine-use-ray": base + ["--engine-use-ray"],  # an old blog post's flag, gone from vLLM
        "gpu-mem-abc": base + ["--gpu-memory-utilization", "abc"],
        "tp-not-int": base + ["--tensor-parallel-size", "two"],
        "bad-choice": base + ["--kv-cache-dtype", "fp3"],
        "baseline": base,
    }
    return parse_all(cases)


def test_parser_rejects_seed_flag_engine_use_ray(negative_results) -> None:
    r = negative_results["engine-use-ray"]
    assert not r.ok and r.exit_code == 2, r
    assert "unrecognized arguments" in r.error and "--engine-use-ray" in r.error, r.error


@pytest.mark.parametrize("case,flag", [("gpu-mem-abc", "--gpu-memory-utilization"),
                                       ("tp-not-int", "--tensor-parallel-size"),
                                       ("bad-choice", "--kv-cache-dtype")])
def test_parser_rejects_bad_value_naming_the_flag(negative_results, case: str, flag: str) -> None:
    r = negative_results[case]
    assert not r.ok and r.exit_code == 2, r
    assert flag in r.error, f"{case}: error does not name {flag}: {r.error}"


def test_parser_accepts_the_unmodified_baseline(negative_results) -> None:
    # The negative cases differ from this list by one flag only: the rejections are theirs.
    assert negative_results["baseline"].ok, negative_results["baseline"].error


def _vllm_env_names(engine: EngineVenv) -> set[str]:
    """The VLLM_* variables the pinned vLLM knows (vllm/envs.py environment_variables); any other
    VLLM_* name in a server's environment makes vLLM warn on every start, and fail with
    --fail-on-environ-validation (vllm/platforms/interface.py validate_environ)."""
    out = subprocess.run([str(engine.python), "-c", "import vllm.envs as e; print('\\n'.join(e.environment_variables))"],
                         capture_output=True, text=True, check=True, timeout=300)
    return set(out.stdout.split())


def test_no_container_sets_a_vllm_variable_vllm_does_not_know(engine: EngineVenv, rendered_scenarios) -> None:
    known = _vllm_env_names(engine)
    assert "VLLM_HTTP_TIMEOUT_KEEP_ALIVE" in known, "vllm.envs listing changed shape"
    rendered = dict(rendered_scenarios)
    for values in sorted((sc.CHART_VLLM / "ci").glob("*-values.yaml")):
        rendered[f"ci/{values.name}"] = sc.render_chart(sc.CHART_VLLM, values)
    unknown = sorted(
        f"{name} :: {obj['kind']}/{obj['metadata']['name']} {c['name']}: {e['name']}"
        for name, objects in rendered.items() for obj in objects
        for tpl in pod_templates([obj], daemonsets=True)
        for c in (*tpl.spec.get("initContainers", []), *tpl.spec.get("containers", []))
        for e in c.get("env", []) if e["name"].startswith("VLLM_") and e["name"] not in known)
    assert not unknown, "unknown VLLM_* variables:\n" + "\n".join(unknown)

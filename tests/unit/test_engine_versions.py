"""The Plan is sized for the vLLM release of the image that runs it (spec/engine_versions.py):
0.32.0 in the model server image, 0.26.0 in Ray 2.58.0's images. A plan for 0.26 differs from the
0.32 plan of the same request exactly where the releases differ, a setting the release lacks is
refused in one line, and explain, plan.json and the values say which release was sized."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.harness.paths import VALUES
from tests.unit.cli_result import one_line_error
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.check.plan_identity import disagreements
from vllm_eks.core.errors import InvalidOptionError
from vllm_eks.memory import overheads
from vllm_eks.memory.budget import max_capture
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec import engine_versions as ev
from vllm_eks.spec.plan import Plan
from vllm_eks.spec.request import PlanRequest
from vllm_eks.values.vllm_inference.images import VLLM_IMAGE_TAG, RayImage, ServerImage

RAY_SCENARIO = dict(model="llama-3.1-70b-instruct", instance="g6e.12xlarge", topology="ray-serve")
PD_SCENARIO = dict(model="qwen3-8b", instance="g6.8xlarge", topology="disaggregated", max_model_len=4096)


def _flat(plan: Plan) -> dict:
    """json_summary with each derivation line under its own key, so a moved line is named."""
    out = {}
    for key, value in plan.json_summary().items():
        if key == "derivations":
            out.update({f"derivations[{d['key']}]": d for d in value})
        else:
            out[key] = value
    return out


def _differing(**request) -> tuple[set[str], Plan, Plan]:
    old = make_plan(PlanRequest(vllm_version="0.26.0", **request))
    new = make_plan(PlanRequest(vllm_version="0.32.0", **request))
    a, b = _flat(old), _flat(new)
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}, old, new


def _declared(*differences: ev.Difference) -> set[str]:
    fields = set(ev.VERSION_FIELDS) | {f"derivations[{k}]" for k in ev.VERSION_DERIVATIONS}
    for d in differences:
        fields |= d.plan_fields | {f"derivations[{k}]" for k in d.derivations}
    return fields


def test_the_images_declare_the_vllm_they_carry() -> None:
    assert ServerImage().vllm_version == ev.SERVER_VLLM == VLLM_IMAGE_TAG.removeprefix("v") == "0.32.0"
    # ray[llm]==2.58.0 pins vllm[audio]==0.26.0; the DLC ships 0.26.0
    assert RayImage().vllm_version == ev.RAY_VLLM == "0.26.0"
    for scenario in ("llama-3.1-70b-g6e-12xlarge-rayservice", "qwen3-8b-g6-8xlarge-disaggregated"):
        values = yaml.safe_load((VALUES / scenario / "vllm-inference.yaml").read_text())
        assert values["ray"]["image"]["vllmVersion"] == "0.26.0", scenario
        assert json.loads((VALUES / scenario / "plan.json").read_text())["vllm_version"] == "0.26.0"
    values = yaml.safe_load((VALUES / "llama-3.1-8b-g6e-xlarge" / "vllm-inference.yaml").read_text())
    assert values["image"]["vllmVersion"] == "0.32.0"


@pytest.mark.parametrize(("request_", "version"), [
    (RAY_SCENARIO, "0.26.0"), (PD_SCENARIO, "0.26.0"),
    (dict(model="llama-3.1-8b-instruct", instance="g6e.xlarge"), "0.32.0"),
    (dict(RAY_SCENARIO, vllm_version="0.32.0"), "0.32.0"),
])
def test_a_plan_is_sized_for_its_images_vllm(request_, version) -> None:
    assert make_plan(PlanRequest(**request_)).engine.vllm_version == version


@pytest.mark.parametrize(("request_", "names"), [
    # the committed Ray scenarios: an L40S / L4 and max_num_seqs on the capture grid meet neither
    (RAY_SCENARIO, ()),
    (PD_SCENARIO, ()),
    # max_num_seqs 100 is off the grid: 0.32 captures it, 0.26 does not
    (dict(RAY_SCENARIO, max_num_seqs=100), ("max-num-seqs-captured",)),
    # SM 10.x with 512 sequences: 0.32 captures up to 1024 tokens, 0.26 up to 512
    (dict(model="llama-3.1-8b-instruct", instance="p6-b200.48xlarge", topology="ray-serve", max_num_seqs=512),
     ("capture-ceiling-blackwell",)),
    (dict(model="llama-3.1-70b-instruct", instance="p6-b200.48xlarge", topology="ray-serve", max_num_seqs=300),
     ("capture-ceiling-blackwell", "max-num-seqs-captured")),
])
def test_a_026_plan_differs_from_the_032_plan_exactly_where_the_releases_differ(request_, names) -> None:
    differing, old, new = _differing(**request_)
    hw = instance_catalog()[request_["instance"]]
    meets = ev.applying(hw.compute_capability, new.engine.max_num_seqs, new.engine.max_num_batched_tokens)
    assert tuple(d.name for d in meets) == names
    assert differing == _declared(*meets)
    if names:
        # 0.32 captures more graphs in both differences: a larger estimate, a smaller KV cache
        assert new.memory.cudagraph_bytes > old.memory.cudagraph_bytes
        assert new.memory.kv_cache_blocks < old.memory.kv_cache_blocks
    for d in meets:
        assert "v0.26.0 vllm/config/vllm.py" in d.source_026 and "v0.32.0 vllm/config/vllm.py" in d.source_032


def test_the_capture_rules_per_release() -> None:
    assert 100 in overheads.capture_sizes(100, 8192)
    assert 100 not in overheads.capture_sizes(100, 8192, with_max_num_seqs=False)
    b200 = instance_catalog()["p6-b200.48xlarge"]
    assert (max_capture(b200, "0.32.0"), max_capture(b200, "0.26.0")) == (1024, 512)
    assert max_capture(instance_catalog()["p5.48xlarge"], "0.26.0") == 512


def test_every_setting_the_planner_writes_exists_in_both_releases() -> None:
    plans = [make_plan(PlanRequest(**PD_SCENARIO, generation_config="vllm", kv_cache_dtype="fp8",
                                   async_scheduling=False)),
             make_plan(PlanRequest(model="qwen2.5-7b", instance="g6.xlarge", kv_cache_memory_gib=4))]
    fields = {f for p in plans for s in (p.engine.settings, p.prefill.settings if p.prefill else {}) for f in s}
    assert {"kv_transfer_config", "generation_config", "kv_cache_memory_bytes", "async_scheduling"} <= fields
    assert all(ev.has_setting(v, f) for v in ev.SUPPORTED for f in fields)


def test_a_setting_the_ray_images_vllm_lacks_is_refused_in_one_line(cli) -> None:
    args = ["plan", "--model", "llama-3.1-70b-instruct", "--instance", "g6e.12xlarge", "--max-num-queued-reqs", "64"]
    err = one_line_error(cli(*args, "--topology", "ray-serve"), "--max-num-queued-reqs", "max_num_queued_reqs",
                         "vLLM 0.26.0", "--vllm-version 0.32.0")
    assert "ray-serve" in err
    one_line_error(cli(*args, "--topology", "disaggregated"), "--max-num-queued-reqs",
                   "vLLM 0.26.0")
    # the model server image's vLLM has it, and so does a Ray image declared to carry 0.32
    for extra in ([], ["--topology", "ray-serve", "--vllm-version", "0.32.0"]):
        ok = cli(*args, *extra, "--json")
        assert ok.exit_code == 0, ok.output
        assert json.loads(ok.stdout)["engine_settings"]["max_num_queued_reqs"] == 64


def test_a_setting_only_the_older_release_has_is_refused_for_the_newer() -> None:
    ev.check_settings("0.26.0", [{"max_num_partial_prefills": 2}], "ray-serve", {})
    with pytest.raises(InvalidOptionError, match=r"engine setting max_num_partial_prefills: vLLM 0\.32\.0"):
        ev.check_settings("0.32.0", [{"max_model_len": 4096}, {"max_num_partial_prefills": 2}], "single-node", {})


def test_explain_and_plan_json_name_the_release(cli) -> None:
    args = ["--model", "llama-3.1-70b-instruct", "--instance", "g6e.12xlarge", "--topology", "ray-serve"]
    out = cli("explain", *args)
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[0].endswith("sized for vLLM 0.26.0")
    assert "vllm_version = 0.26.0" in out.stdout
    summary = json.loads(cli("plan", *args, "--json").stdout)
    assert summary["vllm_version"] == "0.26.0"
    assert Plan.from_summary(summary).engine.vllm_version == "0.26.0"
    # a plan.json written before the release was recorded was sized for 0.32, and still reads
    del summary["vllm_version"]
    assert Plan.from_summary(summary).engine.vllm_version == "0.32.0"


def test_an_unsupported_release_is_refused(cli) -> None:
    with pytest.raises(InvalidOptionError,
                       match=r"--vllm-version 0\.30\.0: the planner sizes vLLM 0\.26\.0 and 0\.32\.0"):
        ev.rules("0.30.0")
    assert cli("plan", "--model", "qwen2.5-7b", "--vllm-version", "0.30.0").exit_code == 2


def test_check_fit_refuses_a_plan_sized_for_another_release_than_the_image_declares(tmp_path) -> None:
    scenario = VALUES / "llama-3.1-70b-g6e-12xlarge-rayservice"
    plan = json.loads((scenario / "plan.json").read_text())
    values = yaml.safe_load((scenario / "vllm-inference.yaml").read_text())
    (tmp_path / "vllm-inference.yaml").write_text(yaml.safe_dump(values))
    assert disagreements(plan, tmp_path) == []
    values["ray"]["image"]["vllmVersion"] = "0.32.0"
    (tmp_path / "vllm-inference.yaml").write_text(yaml.safe_dump(values))
    assert disagreements(plan, tmp_path) == [
        "vLLM release: plan.json has 0.26.0, vllm-inference.yaml ray.image.vllmVersion is 0.32.0"]
    # the key unset: the chart's default Ray image, 0.26.0
    del values["ray"]["image"]["vllmVersion"]
    (tmp_path / "vllm-inference.yaml").write_text(yaml.safe_dump(values))
    assert disagreements(plan, tmp_path) == []
    assert disagreements({**plan, "vllm_version": "0.32.0"}, tmp_path) == [
        "vLLM release: plan.json has 0.32.0, vllm-inference.yaml ray.image.vllmVersion is 0.26.0"]


def test_values_write_the_image_of_the_release_sized(cli, tmp_path) -> None:
    ok = cli("values", "--model", "llama-3.1-8b-instruct", "--instance", "g6e.xlarge", "--vllm-version", "0.26.0",
             "--out", str(tmp_path / "server"))
    assert ok.exit_code == 0, ok.output
    image = yaml.safe_load((tmp_path / "server" / "vllm-inference.yaml").read_text())["image"]
    # the repository is the chart's default (vllm/vllm-openai), at the release's tag
    assert (image.get("repository", "vllm/vllm-openai"), image["tag"], image["vllmVersion"]) == (
        "vllm/vllm-openai", "v0.26.0", "0.26.0")
    # no Ray image the chart pins carries 0.32: `values` refuses rather than declare one falsely
    one_line_error(cli("values", *("--model", "llama-3.1-70b-instruct", "--instance", "g6e.12xlarge"),
                       "--topology", "ray-serve", "--vllm-version", "0.32.0", "--out", str(tmp_path / "ray")),
                   "--vllm-version 0.32.0", "carry vLLM 0.26.0", "ray.image.vllmVersion")

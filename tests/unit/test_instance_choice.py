"""`vllm-eks recommend` (instance_choice.py): sensible rankings for five models of different
size and kind, a reason for every instance type without a choice, the --json form, the cost
formula shared with `bench analyze`, and bad flags as one line."""

from __future__ import annotations

import json
import math

import pytest
from cli_result import one_line_error

from vllm_eks.bench.cost import cost_per_million_tokens
from vllm_eks.catalog.instances import instance_catalog
from vllm_eks.recommend import instance_choice
from vllm_eks.recommend.instance_choice import Recommendation, recommend

M8, M70, M405, DSV3, QNEXT = ("llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "llama-3.1-405b-instruct",
                              "deepseek-v3", "qwen3-next-80b-a3b-instruct")


def _hopper_or_blackwell(instance: str) -> bool:
    """SM 9.x (H100, H200) or later (B200, B300, RTX PRO 6000 Blackwell)."""
    cc = instance_catalog()[instance].compute_capability
    return cc is not None and cc[0] >= 9


def _gpu_mem_gib(name: str) -> float:
    return instance_catalog()[name].gpu_memory_bytes / 2**30


@pytest.fixture(scope="module")
def default_runs() -> dict[str, Recommendation]:
    return {m: recommend(m) for m in (M8, M70, M405, DSV3, QNEXT)}


def test_8b_at_a_small_target_is_best_on_one_gpu():
    for r in (recommend(M8, output_tokens_per_second=500), recommend(M8, concurrency=8)):
        top = r.choices[0]
        assert top.gpus_per_node == 1 and top.tensor_parallel_size == 1, top


def test_8b_at_the_default_target_is_best_on_one_gpu(default_runs):
    top = default_runs[M8].choices[0]
    assert top.gpus_per_node == 1 and top.tensor_parallel_size == 1 and top.pipeline_parallel_size == 1, top


def test_8b_needs_more_than_one_machine_only_on_the_smallest_gpus(default_runs):
    r = default_runs[M8]
    assert all(_gpu_mem_gib(c.instance) < 20 for c in r.choices if c.pipeline_parallel_size > 1)
    # every GPU of the catalog holds it: each priced type has at least its TP=1 layout
    assert any(c.tensor_parallel_size == 1 and c.gpus_per_node == 1 for c in r.choices)


def test_70b_is_best_on_one_eight_gpu_machine(default_runs):
    r = default_runs[M70]
    top = r.choices[0]
    assert top.gpus_per_node == 8 and top.tensor_parallel_size == 8 and top.pipeline_parallel_size == 1
    # 140 GB of weights fit one GPU only where it has well over 100 GiB (B200)
    assert all(_gpu_mem_gib(c.instance) > 150 for c in r.choices if c.tensor_parallel_size * c.pipeline_parallel_size == 1)


def test_405b_is_only_on_large_hopper_blackwell_machines_or_several_machines(default_runs):
    r = default_runs[M405]
    for c in r.choices:
        assert (c.pipeline_parallel_size > 1) or (_hopper_or_blackwell(c.instance) and c.gpus_per_node == 8), c
    assert all(_hopper_or_blackwell(c.instance) and c.gpus_per_node == 8 for c in r.choices[:3])
    one_node = recommend(M405, max_nodes_per_replica=1)
    assert one_node.choices and all(c.pipeline_parallel_size == 1 and _hopper_or_blackwell(c.instance)
                                    and _gpu_mem_gib(c.instance) > 100 for c in one_node.choices)


def test_deepseek_v3_on_one_machine_is_only_eight_gpu_hopper_blackwell():
    r = recommend(DSV3, max_nodes_per_replica=1)
    assert r.choices and all(_hopper_or_blackwell(c.instance) and c.gpus_per_node == 8 for c in r.choices)
    reasons = {o.instance: o.reason for o in r.others}
    assert all(reasons[h.name].startswith("does not fit one node") for h in instance_catalog().values()
               if h.gpus_per_node < 8)


def test_deepseek_v3_top_choices_are_hopper_blackwell(default_runs):
    assert all(_hopper_or_blackwell(c.instance) and c.gpus_per_node == 8 for c in default_runs[DSV3].choices[:3])


def test_qwen3_next_is_spread_over_gpus_that_hold_its_weights(default_runs):
    r = default_runs[QNEXT]
    # its 3B active parameters decode fast: the top choices are few large GPUs, not many small ones
    assert all(c.tensor_parallel_size * c.pipeline_parallel_size <= 8 and _gpu_mem_gib(c.instance) > 70
               for c in r.choices[:3])
    # 80B in BF16: one GPU only where it has well over 100 GiB (B200)
    assert all(_gpu_mem_gib(c.instance) > 150 for c in r.choices if c.tensor_parallel_size * c.pipeline_parallel_size == 1)


@pytest.mark.parametrize("model", [M8, M70, M405, DSV3, QNEXT])
def test_every_instance_type_has_a_choice_shown_or_one_reason(default_runs, model):
    r = default_runs[model]
    shown = {c.instance for c in r.choices[:instance_choice.DEFAULT_TOP]}
    others = [o.instance for o in r.others]
    assert len(others) == len(set(others)) and not shown & set(others)
    assert shown | set(others) == set(instance_catalog())
    assert all(o.reason for o in r.others)
    for h in instance_catalog().values():
        if h.usd_per_hour is None and h.name in others:
            reason = next(o.reason for o in r.others if o.instance == h.name)
            assert reason.startswith(("no price", "does not fit", "no vLLM")), reason


def test_a_model_too_large_for_small_instances_says_so(default_runs):
    reasons = {o.instance: o.reason for o in default_runs[M405].others}
    small = [h.name for h in instance_catalog().values() if h.gpus_per_node * h.gpu_memory_bytes * 16 < 700 * 2**30]
    assert small and all(reasons[n].startswith("does not fit 16 nodes") for n in small)


def test_spot_and_other_regions_have_no_price_rather_than_a_wrong_one():
    spot = recommend(M8, capacity_type="spot")
    assert spot.choices == [] and all(o.reason.startswith("no spot price") for o in spot.others)
    away = recommend(M8, region="eu-west-1")
    assert away.choices == [] and all(o.reason.startswith("no price for eu-west-1") for o in away.others)


@pytest.mark.parametrize("model", [M8, M405])
def test_choices_are_ranked_by_the_cost_formula_of_bench_analyze(default_runs, model):
    r = default_runs[model]
    costs = [c.usd_per_million_output_tokens for c in r.choices]
    assert costs == sorted(costs) and [c.rank for c in r.choices] == list(range(1, len(costs) + 1))
    for c in r.choices:
        again = cost_per_million_tokens(c.usd_per_hour, c.output_tokens_per_second)
        assert again is not None and math.isclose(again, c.usd_per_million_output_tokens, rel_tol=1e-4)
        h = instance_catalog()[c.instance]
        assert math.isclose(c.usd_per_hour, c.nodes * h.usd_per_hour, abs_tol=1e-6)
        # enough replicas for the target, nodes billed whole
        assert c.replicas * c.concurrency_per_replica >= r.target.concurrency
        assert c.nodes == (c.replicas * c.pipeline_parallel_size if c.pipeline_parallel_size > 1
                           else math.ceil(c.replicas * c.tensor_parallel_size / c.gpus_per_node))
        assert c.concurrency_per_replica <= c.max_num_seqs


def test_a_token_rate_target_buys_enough_replicas():
    r = recommend(M70, output_tokens_per_second=5000)
    for c in r.choices:
        assert c.output_tokens_per_second == 5000
        needed = math.ceil(5000 / c.output_tokens_per_second_per_replica - 1e-6)
        assert c.replicas >= needed
        # no node more than the replicas needed take; single-machine copies fill those nodes
        if c.pipeline_parallel_size == 1:
            assert c.nodes == math.ceil(needed * c.tensor_parallel_size / c.gpus_per_node)
            assert c.replicas == c.nodes * (c.gpus_per_node // c.tensor_parallel_size)
        else:
            assert c.nodes == needed * c.pipeline_parallel_size


def test_copies_fill_the_nodes_paid_for_but_never_outnumber_the_requests():
    few = recommend(M8, concurrency=3)
    for c in few.choices:
        assert c.replicas <= 3 and c.nodes == c.pipeline_parallel_size
    many = recommend(M8)
    for c in many.choices:
        if c.pipeline_parallel_size == 1 and c.gpus_per_node // c.tensor_parallel_size <= 32:
            assert c.replicas == c.nodes * (c.gpus_per_node // c.tensor_parallel_size)


def test_a_step_is_slower_with_more_sequences():
    lay = instance_choice._planned(instance_choice.PlanRequest(model=M8, instance="p5.48xlarge", max_model_len=8192,
                                                               tensor_parallel_size=1, pipeline_parallel_size=1),
                                   instance_catalog()["p5.48xlarge"])
    a = instance_choice.resolve_model(M8).architecture
    steps = [instance_choice.step_seconds(a, lay, b, 8192) for b in (1, 8, 64, 256)]
    assert all(s is not None for s in steps) and steps == sorted(steps) and steps[0] < steps[-1]


def test_json_lists_every_choice_and_reason(cli):
    r = cli("recommend", "--model", M70, "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert set(data) >= {"model", "max_model_len", "target", "capacity_type", "region", "max_nodes_per_replica",
                         "estimate", "choices", "others"}
    assert data["target"] == {"concurrency": 32, "output_tokens_per_second": None, "defaulted": True}
    assert "estimate" in data["estimate"] and "bench analyze --plan" in data["estimate"]
    c = data["choices"][0]
    assert set(c) >= {"rank", "instance", "tensor_parallel_size", "pipeline_parallel_size", "replicas", "nodes",
                      "usd_per_hour", "usd_per_million_output_tokens", "plan_command"}
    assert Recommendation.model_validate(data).choices[0].instance == c["instance"]
    # the plan command of a choice plans that very layout
    words = c["plan_command"].split()[1:]
    plan = json.loads(cli(*words, "--json").stdout)
    assert plan["tensor_parallel_size"] == c["tensor_parallel_size"] and plan["max_num_seqs"] == c["max_num_seqs"]


def test_table_says_it_is_an_estimate_and_gives_the_defaults(cli):
    r = cli("recommend", "--model", M8)
    assert r.exit_code == 0, r.stderr
    assert "32 concurrent requests (the default)" in r.stdout and "8192 tokens (the default" in r.stdout
    assert "estimate" in r.stdout and "bench analyze --plan" in r.stdout and "other instance types:" in r.stdout


@pytest.mark.parametrize("args,must_contain", [
    (["--concurrency", "8", "--output-tokens-per-second", "100"], "--concurrency conflicts with --output-tokens-per-second"),
    (["--concurrency", "-3"], "--concurrency must be a finite number > 0"),
    (["--concurrency", "0"], "--concurrency must be a finite number > 0"),
    (["--output-tokens-per-second", "-1"], "--output-tokens-per-second must be a finite number > 0"),
    (["--output-tokens-per-second", "nan"], "--output-tokens-per-second must be a finite number > 0"),
    (["--output-tokens-per-second", "inf"], "--output-tokens-per-second must be a finite number > 0"),
    (["--output-tokens-per-second", "1e300"], "--output-tokens-per-second must be at most"),
    (["--max-model-len", "0"], "--max-model-len must be a finite number > 0"),
    (["--max-model-len", "999999999"], "exceeds the model's max_position_embeddings"),
    (["--max-nodes-per-replica", "0"], "--max-nodes-per-replica must be a finite number > 0"),
    (["--max-nodes-per-replica", "17"], "--max-nodes-per-replica must be at most 16"),
    (["--top", "0"], "--top must be a finite number > 0"),
])
def test_bad_flags_are_one_line(cli, args, must_contain):
    one_line_error(cli("recommend", "--model", M8, *args), must_contain)


def test_unknown_model_is_one_line(cli):
    one_line_error(cli("recommend", "--model", "no-such-model"), "no-such-model")


def test_usage_errors_exit_2(cli):
    assert cli("recommend").exit_code == 2                                              # --model missing
    assert cli("recommend", "--model", M8, "--capacity-type", "reserved").exit_code == 2  # not a choice
    assert cli("recommend", "--model", M8, "--concurrency", "many").exit_code == 2


def test_a_local_config_json_is_ranked_and_its_plan_command_runs(cli, tmp_path):
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
           "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = recommend(str(path))
    assert r.choices and all("--model-source /models/model" in c.plan_command for c in r.choices)
    plan = cli(*r.choices[0].plan_command.split()[1:], "--json")
    assert plan.exit_code == 0, plan.stderr


# A Hub repo outside the catalog, through the Hub stand-in of test_hub_models (its fixtures).
from tests.unit.test_hub_models import GATED, TOKEN, hub, online  # noqa: E402,F401


def test_a_gated_hub_repo_is_ranked_with_a_token_file(online, monkeypatch, tmp_path, cli):
    monkeypatch.delenv("HF_TOKEN")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    r = cli("recommend", "--model", GATED, "--hf-token-file", str(token), "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["model"] == GATED and data["choices"] and GATED in data["choices"][0]["plan_command"]
    one_line_error(cli("recommend", "--model", GATED), GATED)   # no token: one line, as plan says it

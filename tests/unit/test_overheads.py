"""The overhead terms follow vLLM 0.32's profile: capture sizes and graph counts as
vllm/config/vllm.py `_set_cudagraph_sizes` lists them, the activation peak as the larger of the
forward pass and the sampler, and the band `explain` prints."""

from vllm_eks.catalog.models import resolve_model
from vllm_eks.memory import overheads
from vllm_eks.planning.decisions import Decisions
from vllm_eks.spec.request import PlanRequest


def test_capture_sizes_at_256_sequences_are_vllms_51_piecewise_and_35_full():
    sizes = overheads.capture_sizes(256, 8192)
    assert sizes[:5] == [1, 2, 4, 8, 16] and sizes[-3:] == [480, 496, 512]
    assert overheads.graph_counts(256, 8192) == (51, 35)   # "PIECEWISE=51 (largest=512), FULL=35 (largest=256)"


def test_capture_sizes_follow_max_num_seqs_and_batched_tokens():
    assert overheads.capture_sizes(8, 8192) == [1, 2, 4, 8, 16]          # up to 2 x max_num_seqs
    assert overheads.graph_counts(8, 8192) == (5, 4)                      # "PIECEWISE=5 (largest=16), FULL=4 (largest=8)"
    assert overheads.capture_sizes(1024, 300)[-1] == 300                  # max_num_batched_tokens caps and is captured
    assert overheads.capture_sizes(1024, 8192, overheads.DEFAULT_MAX_CAPTURE_BLACKWELL)[-1] == 1024


def test_activation_peak_is_the_larger_of_forward_pass_and_sampler_not_their_sum():
    a = resolve_model("llama-3.1-8b-instruct").architecture
    many = overheads.estimate(a, 1, 1, 32, 8192, 1024, 2)
    sampler = 1024 * a.vocab_size * 4 * overheads.SAMPLER_FP32_COPIES["plan"]
    assert many.activation_peak == int(sampler)                            # 1024 sequences: the sampler sets it
    few = overheads.estimate(a, 1, 1, 32, 8192, 8, 2)
    forward = 8192 * overheads.activation_width(a, 1) * 2 * overheads.ACTIVATION_FACTOR["plan"]
    assert few.activation_peak == int(forward)                            # 8 sequences: the forward pass


def test_graphs_an_older_engine_did_not_subtract_leave_the_budget():
    a = resolve_model("llama-3.1-8b-instruct").architecture
    o = overheads.estimate(a, 1, 1, 32, 8192, 256, 2)
    n = o.without_graphs()
    assert n.cudagraph == 0 and n.total == o.total - o.cudagraph
    assert o.total - n.total == o.cudagraph and o.expected - n.expected == o.expected_graphs


def test_the_plan_takes_the_cautious_end_of_the_band():
    d = Decisions(PlanRequest(model="llama-3.1-70b-instruct", instance="p5.48xlarge"))
    st = d.budget(8, 1).worst
    assert st.available < st.available_expected < st.available_optimistic


def test_explain_prints_the_band(cli):
    r = cli("explain", "--model", "llama-3.1-70b-instruct", "--instance", "p5.48xlarge")
    assert r.exit_code == 0
    line = next(x for x in r.stdout.splitlines() if x.startswith("available_kv_cache_band_per_gpu = "))
    low, expected, high = (float(v.split()[0]) for v in line.split(" = ")[1].split(" / "))
    assert low < expected < high


def test_flashinfer_keeps_a_workspace_flash_attention_does_not():
    b200 = Decisions(PlanRequest(model="llama-3.1-8b-instruct", instance="p6-b200.48xlarge"))
    h100 = Decisions(PlanRequest(model="llama-3.1-8b-instruct", instance="p5.48xlarge"))
    assert (b200.block_rule.backend, h100.block_rule.backend) == ("FLASHINFER", "FLASH_ATTN")
    nt_b200, nt_h100 = b200.budget(1, 1).worst.over.non_torch, h100.budget(1, 1).worst.over.non_torch
    # 8192 tokens x 32 heads x 128 x 16 B = 512 MiB > the 394 MiB default, plus the TRT-LLM buffer
    assert nt_b200 - nt_h100 == 512 * 2**20 + overheads.FLASHINFER_WORKSPACE


def test_fused_moe_workspace_stays_beside_the_weights():
    a = resolve_model("qwen3-235b-a22b").architecture
    # 8192 tokens x 8 experts x hidden 4096, twice (gate/up output and the expert outputs), bf16
    assert overheads.moe_workspace(a, 4, 8192, 2)[0] == 2 * 8192 * 8 * 4096 * 2 == 2**30
    dense = resolve_model("llama-3.1-8b-instruct").architecture
    assert overheads.moe_workspace(dense, 1, 8192, 2) == (0, "")

"""`--model ORG/NAME[@REVISION]` outside the catalog, read from a local Hugging Face Hub stand-in
(tests/harness/fake_hub.py: model_info, HEAD with ETag/X-Repo-Commit/X-Linked-*, ranged GETs)
serving public config.json files that are not in the catalog (data/hub/, SOURCES.md) with
safetensors checkpoints synthesized from them (hub_checkpoints.py).

For each repo: `plan --model ORG/NAME` sizes the KV cache exactly as `plan --model ./config.json
--model-source ORG/NAME` does (bytes per token, layers, blocks, tokens), its checkpoint total is
the sum of the tensors' byte lengths in the headers, the Plan records the commit and the servers
load that commit. Then the cache (a second plan offline), and each failure as one line, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.fake_hub import FakeHub, FakeRepo, serve
from tests.unit.cli_result import one_line_error
from tests.unit.hub_checkpoints import config_path, fake_repo, nbytes, repos, tensors
from vllm_eks.catalog.models import resolve_model
from vllm_eks.planning.planner import make_plan
from vllm_eks.spec.request import PlanRequest

TOKEN = "hf_stand_in_token"
GATED = "meta-llama/Llama-2-7b-chat-hf"
TAGGED = "mistralai/Mistral-Small-24B-Instruct-2501"
TAG_SHA = "1111111111111111111111111111111111111111"
NOT_TRANSFORMERS = "someone/a-gguf-only-repo"
NO_SAFETENSORS = "someone/phi-4-pytorch-bin"  # phi-4's config.json beside a pytorch_model.bin
INSTANCE = "p5.48xlarge"
KINDS = {  # what each stand-in repo covers
    "Qwen/Qwen2.5-7B-Instruct-AWQ": "AWQ INT4 (qweight/qzeros int32, fp16 scales)",
    "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4": "GPTQ INT4 (qweight/qzeros/g_idx int32, fp16 scales)",
    "Qwen/Qwen2.5-VL-7B-Instruct": "multimodal (Qwen2.5-VL, vision tower in the checkpoint)",
    "Qwen/Qwen3-32B-FP8": "FP8 block-quantized (e4m3 weights, fp32 weight_scale_inv)",
    "deepseek-ai/DeepSeek-V2-Lite-Chat": "MLA + MoE (64 experts, 2 shared)",
    "google/gemma-2-9b-it": "sliding window (alternating 4096-token local layers)",
    "ibm-granite/granite-4.0-h-tiny-base": "hybrid (Mamba2 + attention, MoE)",
    "meta-llama/Llama-2-7b-chat-hf": "dense MHA, gated repo",
    "microsoft/phi-4": "dense GQA, fused qkv_proj",
    "mistralai/Mistral-Small-24B-Instruct-2501": "dense GQA",
    "mistralai/Mixtral-8x22B-v0.1": "MoE (8 experts top-2), sharded + index",
    "openai/gpt-oss-20b": "MXFP4 experts (uint8 blocks/scales), sliding window",
}


@pytest.fixture(scope="module")
def hub():
    stand_ins = {r: fake_repo(r, gated=(r == GATED), token=TOKEN if r == GATED else None) for r in repos()}
    stand_ins[TAGGED].tags["v1.0"] = TAG_SHA
    stand_ins[NOT_TRANSFORMERS] = FakeRepo(NOT_TRANSFORMERS, {"model.gguf": b"GGUF", "README.md": b"#"})
    stand_ins[NO_SAFETENSORS] = FakeRepo(NO_SAFETENSORS, {"config.json": config_path("microsoft/phi-4").read_bytes(),
                                                          "pytorch_model.bin": b"\0" * 64}, lfs={"pytorch_model.bin"})
    fake = FakeHub(stand_ins)
    server, endpoint = serve(fake)
    yield fake, endpoint
    server.shutdown()


@pytest.fixture
def online(hub, monkeypatch):
    """The Hub stand-in as HF_ENDPOINT, with a token (the gated repo's)."""
    fake, endpoint = hub
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return fake


def test_stand_in_covers_the_kinds() -> None:
    assert sorted(KINDS) == repos() and len(repos()) >= 10
    catalog_repos = {m.lower() for m in (resolve_model(i).source for i in _catalog_ids())}
    assert not catalog_repos & {r.lower() for r in repos()}


def _catalog_ids() -> list[str]:
    from vllm_eks.catalog.models import model_catalog
    return list(model_catalog())


@pytest.mark.parametrize("repo", repos())
def test_hub_plan_matches_the_config_file_plan(online, repo: str) -> None:
    fake = online.repos[repo]
    hub_plan = make_plan(PlanRequest(model=repo, instance=INSTANCE))
    file_plan = make_plan(PlanRequest(model=str(config_path(repo)), model_source=repo, instance=INSTANCE))
    a, b = hub_plan.memory, file_plan.memory
    assert (a.kv_bytes_per_token_per_gpu, a.kv_cache_blocks, a.kv_cache_tokens, a.max_concurrency) == \
           (b.kv_bytes_per_token_per_gpu, b.kv_cache_blocks, b.kv_cache_tokens, b.max_concurrency), repo
    assert resolve_model(repo).architecture.num_layers == resolve_model(str(config_path(repo))).architecture.num_layers
    assert hub_plan.layout == file_plan.layout and a.weights_bytes_per_gpu == b.weights_bytes_per_gpu
    # the checkpoint total is the headers' bytes, exactly: every tensor's dtype size x elements
    exact = sum(nbytes(dt, shape) for dt, shape in tensors(json.loads(config_path(repo).read_text())).values())
    assert a.weights_bytes_total == exact, (repo, a.weights_bytes_total, exact, b.weights_bytes_total)
    why = next(d for d in a.derivations if d.key == "weights_bytes_total")
    assert f"from safetensors metadata of {repo}@{fake.sha}" in why.formula, why
    # what was sized is what is served
    assert hub_plan.model == repo and hub_plan.model_source == repo and hub_plan.model_revision == fake.sha
    assert hub_plan.engine_args[hub_plan.engine_args.index("--revision") + 1] == fake.sha
    assert file_plan.model_revision is None and "--revision" not in file_plan.engine_args


def test_synthesized_checkpoint_matches_the_real_one() -> None:
    """DeepSeek-V2-Lite-Chat's published tensor table (data/hub/SOURCES.md): 5,291 tensors,
    15,706,484,224 parameters - the synthesized names and shapes reproduce both."""
    import math
    t = tensors(json.loads(config_path("deepseek-ai/DeepSeek-V2-Lite-Chat").read_text()))
    assert (len(t), sum(math.prod(s) for _, s in t.values())) == (5291, 15_706_484_224)


def test_sharded_repo_is_read_through_its_index(online, monkeypatch, tmp_path) -> None:
    """The index, then each shard's header by ranged reads: a few hundred KiB of a 281 GB
    checkpoint."""
    repo = "mistralai/Mixtral-8x22B-v0.1"
    fake = online.repos[repo]
    shards = [n for n in fake.files if n.endswith(".safetensors")]
    assert len(shards) > 1 and "model.safetensors.index.json" in fake.files
    monkeypatch.setenv("VLLM_EKS_HUB_CACHE", str(tmp_path))  # nothing cached: read it all again
    fake.ranges.clear()
    fake.sent.clear()
    model = resolve_model(repo).hub
    assert model.checkpoint.files == len(shards) and model.checkpoint.total_bytes > 280 * 10**9
    assert {name for name, _ in fake.ranges} == {*shards, "model.safetensors.index.json", "config.json"}
    headers = sum(len(fake.files[n].head) for n in shards)
    assert sum(fake.sent[n] for n in shards) <= headers + 100_001 * len(shards)


def test_explain_and_json_name_the_revision(online, cli) -> None:
    repo = "microsoft/phi-4"
    sha = online.repos[repo].sha
    r = cli("plan", "--model", repo, "--instance", "g6e.12xlarge", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["model"] == repo and out["model_revision"] == sha and out["engine_settings"]["revision"] == sha
    e = cli("explain", "--model", repo, "--instance", "g6e.12xlarge")
    assert e.exit_code == 0, e.stderr
    assert f"from safetensors metadata of {repo}@{sha}" in e.stdout


def test_ray_serve_and_staging_use_the_sized_revision(online) -> None:
    repo = "Qwen/Qwen2.5-7B-Instruct-AWQ"
    sha = online.repos[repo].sha
    ray = make_plan(PlanRequest(model=repo, instance="g6e.xlarge", topology="ray-serve"))
    assert ray.engine.settings["revision"] == sha  # Ray Serve LLM's engine_kwargs
    staged = make_plan(PlanRequest(model=repo, instance="g6e.xlarge", stage="s3://bucket/qwen",
                                   model_source="s3://bucket/qwen"))
    assert staged.staging.staging_repo == repo and staged.staging.staging_revision == sha
    assert "revision" not in staged.engine.settings  # the servers read the staged copy, not the Hub


def test_a_tag_resolves_to_its_commit(online) -> None:
    p = make_plan(PlanRequest(model=f"{TAGGED}@v1.0", instance=INSTANCE))
    assert p.model_revision == TAG_SHA and p.model == TAGGED


def test_second_plan_needs_no_network(online, monkeypatch, cli) -> None:
    repo = "google/gemma-2-9b-it"
    first = make_plan(PlanRequest(model=repo, instance=INSTANCE))
    online.down = True
    try:
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
        again = make_plan(PlanRequest(model=repo, instance=INSTANCE))
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        offline = make_plan(PlanRequest(model=repo, instance=INSTANCE))
        pinned = make_plan(PlanRequest(model=f"{repo}@{first.model_revision}", instance=INSTANCE))
    finally:
        online.down = False
    assert first.json_summary() == again.json_summary() == offline.json_summary()
    assert pinned.memory == first.memory and pinned.model_revision == first.model_revision


def test_catalog_models_never_touch_the_hub(online) -> None:
    for fake in online.repos.values():
        fake.requests.clear()
    make_plan(PlanRequest(model="llama-3.1-8b-instruct", instance="g6e.xlarge"))
    make_plan(PlanRequest(model="meta-llama/Llama-3.1-8B-Instruct", instance="g6e.xlarge"))
    assert not any(f.requests for f in online.repos.values())


def test_gated_repo_with_a_token_file(online, monkeypatch, tmp_path, cli) -> None:
    monkeypatch.delenv("HF_TOKEN")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    r = cli("plan", "--model", GATED, "--instance", "g6e.xlarge", "--hf-token-file", str(token), "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["model_revision"] == online.repos[GATED].sha


def test_weights_from_config_without_safetensors(online) -> None:
    plan = make_plan(PlanRequest(model=NO_SAFETENSORS, instance=INSTANCE))
    file_plan = make_plan(PlanRequest(model=str(config_path("microsoft/phi-4")), model_source=NO_SAFETENSORS,
                                      instance=INSTANCE))
    assert plan.memory.weights_bytes_total == file_plan.memory.weights_bytes_total
    why = next(d for d in plan.memory.derivations if d.key == "weights_bytes_total")
    assert f"from config.json of {NO_SAFETENSORS}@{online.repos[NO_SAFETENSORS].sha}" in why.formula, why


# -- failures: one line naming the repo and the way out, exit 1 --------------------------------
def test_gated_without_a_token(online, monkeypatch, cli) -> None:
    monkeypatch.delenv("HF_TOKEN")
    one_line_error(cli("plan", "--model", GATED, "--instance", "g6e.xlarge"),
                   GATED, "gated", "HF_TOKEN", "--hf-token-file", "licence")


def test_gated_with_a_token_that_has_no_access(online, monkeypatch, cli) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_someone_else")  # 403 GatedRepo: the licence not accepted
    one_line_error(cli("plan", "--model", GATED, "--instance", "g6e.xlarge"), GATED, "gated", "licence")


def test_missing_repo(online, cli) -> None:
    one_line_error(cli("plan", "--model", "nobody/no-such-model", "--instance", "g6e.xlarge"),
                   "nobody/no-such-model", "no such repo", "catalog models", "--model ./config.json")


def test_missing_repo_without_a_token(online, monkeypatch, cli) -> None:
    monkeypatch.delenv("HF_TOKEN")  # the Hub answers 401 for it: it does not say whether it exists
    one_line_error(cli("plan", "--model", "nobody/no-such-model", "--instance", "g6e.xlarge"),
                   "nobody/no-such-model", "not found", "HF_TOKEN")


def test_bad_revision(online, cli) -> None:
    one_line_error(cli("plan", "--model", f"{TAGGED}@no-such-branch", "--instance", "g6e.xlarge"),
                   TAGGED, "no revision 'no-such-branch'")


def test_not_a_transformers_model(online, cli) -> None:
    one_line_error(cli("plan", "--model", NOT_TRANSFORMERS, "--instance", "g6e.xlarge"),
                   NOT_TRANSFORMERS, "no config.json", "not a transformers model")


def test_offline_without_a_cache(cli) -> None:
    # the unit conftest sets HF_HUB_OFFLINE=1 and an empty cache
    one_line_error(cli("plan", "--model", "microsoft/phi-4", "--instance", "g6e.xlarge"),
                   "microsoft/phi-4", "HF_HUB_OFFLINE", "--model ./config.json --model-source microsoft/phi-4")


def test_no_network_and_nothing_cached(monkeypatch, cli) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")  # HF_ENDPOINT is a port nothing listens on
    one_line_error(cli("plan", "--model", "microsoft/phi-4", "--instance", "g6e.xlarge"),
                   "microsoft/phi-4", "cannot reach", "HF_HUB_OFFLINE", "--model ./config.json")


def test_unreadable_token_file(online, tmp_path, cli) -> None:
    one_line_error(cli("plan", "--model", GATED, "--instance", "g6e.xlarge", "--hf-token-file",
                       str(tmp_path / "missing")), "--hf-token-file")


def test_cli_process_reads_the_environment(online, hub, tmp_path) -> None:
    """The environment as a CLI process gets it (huggingface_hub reads HF_HUB_OFFLINE and
    HF_ENDPOINT at import): online once, then HF_HUB_OFFLINE=1 plans from the cache."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    _, endpoint = hub
    exe = Path(sys.executable).with_name("vllm-eks")
    env = {**os.environ, "HF_ENDPOINT": endpoint, "VLLM_EKS_HUB_CACHE": str(tmp_path / "cache"),
           "HF_HOME": str(tmp_path / "home")}
    env.pop("HF_HUB_OFFLINE", None)
    args = [str(exe), "plan", "--model", "openai/gpt-oss-20b", "--instance", "g6e.xlarge", "--json"]
    first = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    offline = subprocess.run(args, env={**env, "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"},
                             capture_output=True, text=True, timeout=120)
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout) == json.loads(first.stdout)
    empty = subprocess.run(args, env={**env, "HF_HUB_OFFLINE": "1", "VLLM_EKS_HUB_CACHE": str(tmp_path / "none")},
                           capture_output=True, text=True, timeout=120)
    assert empty.returncode == 1 and empty.stderr.count("\n") == 1 and "HF_HUB_OFFLINE" in empty.stderr, empty.stderr


def test_a_revision_with_slashes_is_a_revision(online) -> None:
    online.repos[TAGGED].tags["refs/pr/7"] = TAG_SHA
    assert make_plan(PlanRequest(model=f"{TAGGED}@refs/pr/7", instance=INSTANCE)).model_revision == TAG_SHA


def test_stand_in_serves_each_commit_its_own_files(tmp_path, monkeypatch) -> None:
    """A repo with an older commit beside main (what the pinned-revision engine test publishes):
    model_info, the tree listing (recursive or not, a folder, an unknown folder) and the files
    each answer for the commit asked, and bytes are counted per commit."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import EntryNotFoundError

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # read at import; the tests run offline
    old = "2222222222222222222222222222222222222222"
    repo = FakeRepo("someone/two-commits", files={"config.json": b'{"n": 2}', "sub/notes.txt": b"main"},
                    commits={old: {"config.json": b'{"n": 1}', "tokenizer.json": b"{}"}})
    server, endpoint = serve(repo)
    try:
        api = HfApi(endpoint=endpoint)
        assert api.model_info(repo.repo, revision=old).sha == old
        assert sorted(api.list_repo_files(repo.repo, revision=old)) == ["config.json", "tokenizer.json"]
        assert sorted(api.list_repo_files(repo.repo)) == ["config.json", "sub/notes.txt"]
        top = {(e.path, type(e).__name__) for e in api.list_repo_tree(repo.repo)}
        assert top == {("config.json", "RepoFile"), ("sub", "RepoFolder")}
        assert [e.path for e in api.list_repo_tree(repo.repo, path_in_repo="sub")] == ["sub/notes.txt"]
        with pytest.raises(EntryNotFoundError):
            list(api.list_repo_tree(repo.repo, path_in_repo="sub", revision=old))
        got = Path(api.hf_hub_download(repo.repo, "config.json", revision=old, cache_dir=tmp_path)).read_bytes()
        assert got == b'{"n": 1}' and repo.sent_by_commit == {old: len(got)}
    finally:
        server.shutdown()

"""Every catalog entry parses, and the parameter count computed from its config matches the
published figure (a check on both the data and the weight formulas)."""

import json
from dataclasses import replace

import pytest

from vllm_eks.catalog.models import model_catalog, resolve_model
from vllm_eks.model.weights import total_parameters

REQUIRED = ["llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "llama-3.1-405b-instruct",
            "llama-3.3-70b-instruct", "qwen2.5-0.5b-instruct", "qwen2.5-7b-instruct", "qwen2.5-72b-instruct",
            "qwen3-8b", "qwen3-32b", "qwen3-235b-a22b", "mixtral-8x7b-instruct", "mistral-7b-instruct",
            "deepseek-v3", "deepseek-v3.2", "gpt-oss-120b", "gemma-3-27b-it"]


def test_catalog_covers_the_required_models():
    assert set(REQUIRED) <= set(model_catalog())


@pytest.mark.parametrize("mid", sorted(model_catalog()))
def test_parameter_count_matches_published(mid):
    entry = model_catalog()[mid]
    assert entry.config_source, "every entry cites the config it was checked against"
    computed = total_parameters(resolve_model(mid).architecture)
    # DeepSeek-V3's published total includes its 14B multi-token-prediction layer, which vLLM
    # does not load unless speculative decoding asks for it
    assert abs(computed - entry.num_parameters) / entry.num_parameters < 0.025


def test_kinds_of_attention():
    assert resolve_model("deepseek-v3").architecture.mla is not None
    assert not resolve_model("deepseek-v3").architecture.mla.sparse
    assert resolve_model("deepseek-v3.2").architecture.mla.sparse
    assert resolve_model("gpt-oss-120b").architecture.has_sliding_window
    assert resolve_model("gemma-3-27b-it").architecture.has_sliding_window
    assert resolve_model("qwen3-235b-a22b").architecture.moe is not None
    assert not resolve_model("qwen2.5-7b-instruct").architecture.has_sliding_window  # use_sliding_window false


def test_repo_id_and_config_path_resolve(tmp_path):
    by_repo = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    assert by_repo.id == "llama-3.1-8b-instruct"
    (tmp_path / "config.json").write_text(json.dumps(model_catalog()["llama-3.1-8b-instruct"].config))
    by_dir = resolve_model(str(tmp_path))
    by_file = resolve_model(str(tmp_path / "config.json"))
    assert replace(by_dir.architecture, name="x") == replace(by_file.architecture, name="x")
    assert total_parameters(by_dir.architecture) == total_parameters(by_repo.architecture)

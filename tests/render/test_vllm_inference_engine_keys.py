"""The typed engine keys (engine.maxModelLen, engine.maxNumSeqs, engine.gpuMemoryUtilization and
the disaggregated pools' maxNumSeqs) in every topology: flags right after the chart-owned
parallel flags on the Deployment and both LeaderWorkerSet roles, engine_kwargs entries on the Ray
topologies; gpuMemoryUtilization null renders nothing; the GPU count is engine.tensorParallelSize."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.harness import helm
from tests.harness.args import follows_parallel_flags, value_of
from tests.harness.paths import CHARTS
from tests.render.test_vllm_inference_multinode import lws_of, templates
from tests.render.test_vllm_inference_rayserve import head_and_groups, rayservice, serve_app

pytestmark = pytest.mark.render

CHART = CHARTS / "vllm-inference"
CI = CHART / "ci"
TYPED = {"engine.maxModelLen": 12288, "engine.maxNumSeqs": 48, "engine.gpuMemoryUtilization": 0.85}
FLAGS = ["--max-model-len", "12288", "--max-num-seqs", "48", "--gpu-memory-utilization", "0.85"]


def render(values: Path | None = None, set_values: dict[str, Any] | None = None,
           helm_version: str = "helm4") -> list[dict[str, Any]]:
    return helm.render(CHART, [values] if values else [], set_values, helm=helm_version, namespace="llm")


def deployment_args(objects: list[dict[str, Any]]) -> list[str]:
    (d,) = [o for o in objects if o["kind"] == "Deployment"]
    (c,) = d["spec"]["template"]["spec"]["containers"]
    return c["args"]


def test_deployment_renders_the_typed_keys_after_the_parallel_flags(helm_version: str) -> None:
    args = deployment_args(render(set_values={**TYPED, "engine.args": ["--dtype", "bfloat16"]},
                                  helm_version=helm_version))
    assert follows_parallel_flags(args, FLAGS), args
    # before engine.args, and each once
    assert args.index("--gpu-memory-utilization") < args.index("--dtype")
    assert all(args.count(flag) == 1 for flag in FLAGS[::2])


def test_defaults_render_vllms_defaults() -> None:
    args = deployment_args(render())
    assert follows_parallel_flags(args, ["--max-model-len", "32768", "--max-num-seqs", "256",
                                         "--gpu-memory-utilization", "0.9"]), args


def test_gpu_memory_utilization_null_renders_no_flag(tmp_path: Path, helm_version: str) -> None:
    values = tmp_path / "kv-bytes.yaml"
    values.write_text("engine:\n  gpuMemoryUtilization: null\n"
                      "  args: [\"--kv-cache-memory-bytes\", \"4294967296\"]\n")
    args = deployment_args(render(values, helm_version=helm_version))
    assert "--gpu-memory-utilization" not in args
    assert follows_parallel_flags(args, ["--max-model-len", "32768", "--max-num-seqs", "256"])
    assert value_of(args, "--kv-cache-memory-bytes") == "4294967296"
    rs = rayservice(render(values, {"topology": "ray-serve", "engine.args": []}, helm_version=helm_version))
    assert "gpu_memory_utilization" not in serve_app(rs)["args"]["llm_configs"][0]["engine_kwargs"]


def test_both_leader_worker_roles_render_the_typed_keys(helm_version: str) -> None:
    objects = render(CI / "07-multi-node-lws-values.yaml", TYPED, helm_version=helm_version)
    leader, worker = templates(lws_of(objects))
    for pod in (leader, worker):
        (c,) = pod["spec"]["containers"]
        assert follows_parallel_flags(c["args"], FLAGS), c["args"]
        assert c["resources"]["limits"]["nvidia.com/gpu"] == 8


def test_ray_serve_merges_the_typed_keys_into_engine_kwargs(helm_version: str) -> None:
    rs = rayservice(render(CI / "08-ray-serve-values.yaml", TYPED, helm_version=helm_version))
    (llm,) = serve_app(rs)["args"]["llm_configs"]
    assert llm["engine_kwargs"] == {"tensor_parallel_size": 4, "pipeline_parallel_size": 1, "max_model_len": 12288,
                                    "max_num_seqs": 48, "gpu_memory_utilization": 0.85,
                                    "enable_prefix_caching": True}
    # the worker's GPUs follow engine.tensorParallelSize
    _, (group,) = head_and_groups(rs)
    assert group["rayStartParams"]["num-gpus"] == "4"
    (c,) = group["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 4


def test_disaggregated_pools_take_their_own_max_num_seqs(tmp_path: Path, helm_version: str) -> None:
    rs = rayservice(render(CI / "09-disaggregated-values.yaml",
                           {"engine.maxModelLen": 8192, "engine.gpuMemoryUtilization": 0.8},
                           helm_version=helm_version))
    app = serve_app(rs)["args"]
    for role, seqs in (("prefill", 16), ("decode", 64)):
        kwargs = app[f"{role}_config"]["engine_kwargs"]
        assert (kwargs["max_model_len"], kwargs["max_num_seqs"], kwargs["gpu_memory_utilization"]) == (8192, seqs, 0.8)
        assert kwargs["tensor_parallel_size"] == 1 and "kv_transfer_config" in kwargs
    # a pool without maxNumSeqs takes engine.maxNumSeqs
    unset = tmp_path / "decode-unset.yaml"
    unset.write_text((CI / "09-disaggregated-values.yaml").read_text().replace("    maxNumSeqs: 64\n", ""))
    rs = rayservice(render(unset, {"engine.maxNumSeqs": 40}, helm_version=helm_version))
    app = serve_app(rs)["args"]
    assert app["prefill_config"]["engine_kwargs"]["max_num_seqs"] == 16
    assert app["decode_config"]["engine_kwargs"]["max_num_seqs"] == 40
    for group in head_and_groups(rs)[1]:
        assert group["rayStartParams"]["num-gpus"] == "1"
        assert json.loads(json.loads(group["rayStartParams"]["resources"])) == {group["groupName"]: 1}


@pytest.mark.parametrize("key", ["engine.maxModelLen", "engine.maxNumSeqs"])
def test_schema_refuses_a_float_count_naming_the_key(key: str, helm_version: str) -> None:
    with pytest.raises(helm.HelmError) as info:
        render(set_values={key: 1.5}, helm_version=helm_version)
    leaf = key.split(".")[1]
    assert leaf in info.value.stderr and "engine" in info.value.stderr


def test_the_gpu_key_is_gone(helm_version: str) -> None:
    with pytest.raises(helm.HelmError) as info:
        render(set_values={"gpu": {"count": 1}}, helm_version=helm_version)
    assert "gpu" in info.value.stderr

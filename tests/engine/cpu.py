"""What changes when a rendered `vllm serve` command runs on this CPU machine instead of a GPU
pod. The whole list lives in `cpu_substitutions` (for real servers) and `local_paths` (for the
parser's pre-load checks); tests/engine/README.md explains each entry. Everything else in the
rendered argument list reaches vLLM unchanged."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.harness.paths import GENERATOR_PACKAGE

# Tiny stand-in per architecture of the catalog (generator/vllm_eks/catalog/data/models.yaml). The stand-in
# keeps the attention shape family: GQA, QKV bias, sliding-window layers. gpt-oss scenarios are
# served by the sliding-window stand-in: vLLM renders gpt-oss chat requests with the harmony
# encoding, whose token ids (200000+) need the real 201k vocabulary, which cannot be built
# offline. The tiny gpt-oss model (experts, sinks, alternating windows) is used by the sizing
# tests, where no chat is rendered.
TINY_FOR_ARCHITECTURE = {
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "MistralForCausalLM": "mistral-swa",
    "GptOssForCausalLM": "mistral-swa",
    "DeepseekV3ForCausalLM": "deepseek-v3",
}
# KV cache budget of every scenario server, in GiB (VLLM_CPU_KVCACHE_SPACE takes whole GiB).
SCENARIO_KV_GIB = 1

# flag -> replacement value (None = drop the flag and its value)
_SET_TO_ONE = ("--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp",
               "--data-parallel-size", "-dp")
# Flags that only mean something on GPUs / in the cluster; each is listed in the docs.
_DROP_WITH_VALUE = (
    "--kv-cache-memory-bytes",  # GPU-sized budget; the CPU budget is VLLM_CPU_KVCACHE_SPACE
    "--quantization", "-q",  # the tiny stand-ins are unquantized bf16 checkpoints
    "--distributed-executor-backend",  # ray/mp across GPUs; one CPU worker here
    "--load-format", "--model-loader-extra-config",  # S3 streaming; the model is a local folder
    "--kv-transfer-config",  # NIXL prefill/decode transfer over GPU memory and EFA
)
_DROP_SWITCH = ("--enable-expert-parallel",)  # one CPU worker per server: no ranks to spread experts over
# The CPU attention kernel takes block sizes that are multiples of 32 only
# (vllm/v1/attention/backends/cpu_attn.py get_supported_kernel_block_sizes: MultipleOf(32));
# CUDA's default 16 fails at start-up with "No common block size for 16". 128 is the CPU default.
CPU_BLOCK_MULTIPLE = 32
CPU_DEFAULT_BLOCK_SIZE = 128
# MLA models (DeepSeek-V3) take another backend: without AMX, vLLM's reference CPU_MLA backend,
# whose decode kernel pages blocks of exactly 16 (vllm/v1/attention/backends/mla/cpu_mla.py
# get_supported_kernel_block_sizes: [16]; vllm/platforms/cpu.py overrides any other size with a
# warning). With AMX the platform picks AMX_MLA, which pages multiples of 32 like CPU_ATTN.
CPU_MLA_BLOCK_SIZE = 16


def _uses_mla(tiny_model: str) -> bool:
    """The stand-in caches one MLA latent per token (its config has kv_lora_rank), as the
    engine decides (vllm ModelConfig.use_mla)."""
    config = Path(tiny_model) / "config.json"
    return config.exists() and bool(json.loads(config.read_text()).get("kv_lora_rank"))


def _cpu_has_amx() -> bool:
    """AMX tiles on this CPU (the flag vLLM's torch.cpu._is_amx_tile_supported() reads)."""
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


def cpu_block_size(value: int, *, mla: bool) -> int:
    """The rendered --block-size, or the size the CPU attention backend of the stand-in pages."""
    if mla and not _cpu_has_amx():
        return CPU_MLA_BLOCK_SIZE
    return value if value % CPU_BLOCK_MULTIPLE == 0 else CPU_DEFAULT_BLOCK_SIZE


def tiny_model_for(model_id: str) -> str:
    """Stand-in name for a catalog model id (plan.json `model`)."""
    catalog = yaml.safe_load((GENERATOR_PACKAGE / "catalog" / "data" / "models.yaml").read_text())
    models = catalog.get("models", catalog)
    entry = models.get(model_id)
    if entry is None:
        raise KeyError(f"model {model_id!r} is not in the catalog (generator/vllm_eks/catalog/data/models.yaml)")
    arch = entry["config"]["architectures"][0]
    if arch not in TINY_FOR_ARCHITECTURE:
        raise KeyError(f"no tiny stand-in for architecture {arch} (model {model_id}): add one to "
                       "tests/engine/scripts/write_tiny_models.py and TINY_FOR_ARCHITECTURE")
    return TINY_FOR_ARCHITECTURE[arch]


def _split(args: list[str]) -> tuple[str | None, list[list[str]]]:
    """(positional model or None, [[flag, value?], ...]) keeping the original order."""
    model = None
    rest = list(args)
    if rest and not rest[0].startswith("-"):
        model = rest.pop(0)
    groups: list[list[str]] = []
    for tok in rest:
        if tok.startswith("-") and not _is_number(tok):
            groups.append([tok])
        elif groups:
            groups[-1].append(tok)
        else:
            groups.append([tok])
    return model, groups


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def _name(group: list[str]) -> str:
    return group[0].split("=", 1)[0]


@dataclass
class Substituted:
    args: list[str]
    env: dict[str, str]
    changes: list[str] = field(default_factory=list)


def cpu_substitutions(args: list[str] | tuple[str, ...], *, tiny_model: str, port: int,
                      kv_cache_gib: int = SCENARIO_KV_GIB, keep_pipeline: bool = False,
                      master_port: int | None = None, keep_model: bool = False) -> Substituted:
    """The rendered `vllm serve` arguments, changed only where a CPU machine requires it:
    model -> local tiny stand-in; TP/PP/DP -> 1; the KV budget -> VLLM_CPU_KVCACHE_SPACE;
    --port -> a free loopback port with --host 127.0.0.1; a block size the CPU kernel cannot
    page (not a multiple of 32 -> 128; for an MLA stand-in without AMX, anything but 16 -> 16);
    GPU/cluster-only flags dropped.
    Multi-node groups (keep_pipeline): the pipeline parallel size stays as rendered (one stage
    per process, as one per pod), TP -> 1 (one CPU worker per process), and --master-port ->
    `master_port` (a free loopback port: several runs share this machine).
    keep_model: the rendered model (a Hugging Face repo id) and any --model stay as they are: a
    Hub stand-in serves the files of `tiny_model` under that id (HF_ENDPOINT, set by the caller),
    so `tiny_model` only tells its attention kind (the MLA block size)."""
    model, groups = _split(list(args))
    changes: list[str] = []
    if keep_model:
        out: list[str] = [model] if model is not None else []
    else:
        out = [tiny_model]
        changes.append(f"model {model} -> {tiny_model}")
    saw_host = False
    mla = _uses_mla(tiny_model)
    for group in groups:
        name = _name(group)
        if name == "--model" and not keep_model:
            changes.append(f"--model {group[1:] or group[0]} -> {tiny_model} (positional)")
            continue
        if keep_pipeline and name in ("--pipeline-parallel-size", "-pp"):
            out += group
        elif name == "--master-port" and master_port is not None:
            changes.append(f"--master-port {group[-1]} -> {master_port}")
            out += ["--master-port", str(master_port)]
        elif name in _SET_TO_ONE:
            value = group[0].split("=", 1)[1] if "=" in group[0] else group[1]
            if value != "1":
                changes.append(f"{name} {value} -> 1")
            out += [name, "1"]
        elif name == "--block-size":
            value = group[0].split("=", 1)[1] if "=" in group[0] else group[1]
            size = cpu_block_size(int(value), mla=mla)
            if size != int(value):
                changes.append(f"--block-size {value} -> {size}")
            out += ["--block-size", str(size)]
        elif name == "--port":
            changes.append(f"--port {group[-1]} -> {port}")
            out += ["--port", str(port)]
        elif name == "--host":
            saw_host = True
            out += ["--host", "127.0.0.1"]
        elif name in _DROP_WITH_VALUE or name in _DROP_SWITCH:
            changes.append(f"dropped {' '.join(group)}")
        elif name in ("--tokenizer",):
            changes.append(f"{name} {group[-1]} -> {tiny_model}")
            out += [name, tiny_model]
        elif name == "--chat-template" and group[-1].startswith("/"):
            changes.append(f"{name} {group[-1]} -> {tiny_model}/chat_template.jinja")
            out += [name, f"{tiny_model}/chat_template.jinja"]
        else:
            out += group
    if not any(_name(g) == "--port" for g in groups):
        out += ["--port", str(port)]
    if not saw_host:
        out += ["--host", "127.0.0.1"]
    changes.append("listen on 127.0.0.1 only")
    env = {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib)}
    changes.append(f"KV cache budget VLLM_CPU_KVCACHE_SPACE={kv_cache_gib} GiB")
    return Substituted(out, env, changes)


def local_paths(args: list[str] | tuple[str, ...], *, tiny_model: str,
                container: dict[str, Any] | None = None) -> list[str]:
    """For the parser's pre-load checks (they open files): the model and paths that exist only
    inside the pod (under one of the container's volume mounts) point at local stand-ins.
    Every flag and every other value stays as rendered."""
    mounts = [m["mountPath"] for m in (container or {}).get("volumeMounts") or []]
    model, groups = _split(list(args))
    out = [tiny_model]
    for group in groups:
        name = _name(group)
        if name == "--model":
            continue
        if name in ("--tokenizer",):
            out += [name, tiny_model]
        elif name == "--chat-template" and group[-1].startswith("/") and (
                not mounts or any(group[-1].startswith(m.rstrip("/") + "/") for m in mounts)):
            out += [name, str(Path(tiny_model) / "chat_template.jinja")]
        else:
            out += group
    return out

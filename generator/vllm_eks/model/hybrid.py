"""Recurrent-state layers of the hybrid models the sizing covers, as vLLM 0.32 builds them.

Two families are sized; every other state-space or linear-attention model is refused by name
(architecture.refuse_unmodelled):
- Qwen3-Next (`qwen3_next`, vllm/model_executor/models/qwen3_next.py): Gated DeltaNet linear
  attention in every layer but each `full_attention_interval`-th (or as `layer_types` lists
  them), gated full attention in the others, MoE with a shared expert in every layer.
- Granite 4.0-H (`granitemoehybrid`, vllm/model_executor/models/granitemoehybrid.py): Mamba2
  mixers or attention as `layer_types` lists them ("mamba" / "attention"), an MoE block plus a
  shared MLP in every layer.

What a state layer costs (vllm/v1/kv_cache_interface.py MambaSpec): one fixed-size state per
sequence, the causal-convolution window plus the recurrent state, shaped by
vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator and stored in the
model dtype (MambaStateDtypeCalculator with --mamba-cache-dtype / --mamba-ssm-cache-dtype
"auto"). The hybrid allocator stores that state in a block of the shared KV pool, so the
attention block size is raised until one attention page holds a state, and the state page is
padded to the attention page (vllm/platforms/interface.py _align_hybrid_block_size)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from vllm_eks.core.errors import ModelConfigError, UnsupportedArchitectureError

# the bound of every config integer (architecture.py FIELD_MAX names the tighter ones)
MAX_CONFIG_INT = 2**31 - 1

# model_type -> the vLLM 0.32 class that builds it, for the families sized here
SIZED_MODEL_TYPES = {"qwen3_next": "Qwen3NextForCausalLM", "granitemoehybrid": "GraniteMoeHybridForCausalLM"}

# vLLM 0.32 runs with prefix caching on (the Plan enables it), which turns on
# mamba_cache_mode "align" (vllm/model_executor/models/config.py MambaModelConfig); a request
# then holds 2 state blocks per state layer group (MambaSpec.max_memory_usage_bytes: the running
# state and the last block-aligned checkpoint), plus the prefill checkpoint block Mamba2 mixers
# declare (vllm/model_executor/layers/mamba/mamba_mixer2.py get_kv_cache_spec:
# num_prefill_checkpoint_blocks=1); Gated DeltaNet declares none.
ALIGN_MODE_BLOCKS = 2


@dataclass(frozen=True)
class StateLayers:
    kind: str                    # "gated-deltanet" | "mamba2"
    layers: tuple[bool, ...]     # per layer: True where the layer keeps a recurrent state
    conv_channels: int           # channels of the causal convolution (all ranks)
    conv_kernel: int             # the convolution keeps conv_kernel - 1 past inputs
    heads: int                   # heads of the recurrent state, split over TP ranks
    head_dims: tuple[int, int]   # each head's state matrix
    groups: int                  # Mamba2 B/C groups (replicated up to TP), 0 for Gated DeltaNet
    group_width: int             # channels per group in the convolution (Mamba2 2 x d_state)
    mixer_params: int            # parameters of one state layer's mixer
    checkpoint_blocks: int       # extra prefill checkpoint blocks per request (Mamba2: 1)

    @property
    def count(self) -> int:
        return sum(self.layers)

    @property
    def blocks_per_request(self) -> int:
        return ALIGN_MODE_BLOCKS + self.checkpoint_blocks

    def tp_problem(self, tp: int) -> str | None:
        """Why vLLM cannot shard this state over `tp` ranks (mamba_utils divide()), or None."""
        if self.heads % tp or self.conv_channels_total(tp) % tp:
            return (f"it must divide the {self.heads} {self.kind} state heads and their "
                    f"{self.conv_channels_total(tp)} convolution channels")
        return None

    def conv_channels_total(self, tp: int) -> int:
        if not self.groups:
            return self.conv_channels
        # MambaStateShapeCalculator.extra_groups_for_head_shards: groups are replicated so that
        # every rank holds the groups its heads read
        groups = self.groups + (0 if self.groups % tp == 0 else tp - self.groups)
        return self.conv_channels + groups * self.group_width

    def state_bytes(self, tp: int, dtype_bytes: int) -> int:
        """One layer's state of one sequence on one rank, as MambaSpec.real_page_size_bytes."""
        conv = self.conv_channels_total(tp) // tp * (self.conv_kernel - 1) * dtype_bytes
        ssm = self.heads // tp * self.head_dims[0] * self.head_dims[1] * dtype_bytes
        return conv + ssm


def aligned_block_size(block: int, attention_page_per_token: int, state_page: int, kernel_block: int = 16) -> int:
    """vllm/platforms/interface.py _align_hybrid_block_size (0.32): the smallest multiple of the
    attention kernel's block alignment (max of its smallest kernel block and the block size
    asked for) whose attention page holds one state, rounded to a multiple of every attention
    backend's smallest kernel block; a block size already large enough is kept. The CUDA
    backends this sizing selects (attention.py) all have 16 as their smallest kernel block."""
    align = max(kernel_block, block)
    raised = align * math.ceil(state_page / (align * attention_page_per_token))
    raised = kernel_block * math.ceil(raised / kernel_block)
    return max(block, raised)


def is_sized(cfg: dict, top: dict) -> bool:
    mt = cfg.get("model_type")
    if not isinstance(mt, str) or mt not in SIZED_MODEL_TYPES:
        return False
    archs = top.get("architectures") or cfg.get("architectures") or [SIZED_MODEL_TYPES[mt]]
    return isinstance(archs, list) and archs == [SIZED_MODEL_TYPES[mt]]


def _int(cfg: dict, key: str, where: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if value is None:
        raise ModelConfigError(f"{where}: missing required field '{key}'")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelConfigError(f"{where}: field '{key}' must be a positive integer, got {value!r}")
    if value > MAX_CONFIG_INT:
        raise ModelConfigError(f"{where}: field '{key}' must be at most {MAX_CONFIG_INT:,}, got {str(value)[:20]}...")
    return value


def _bool(cfg: dict, key: str, where: str, default: bool) -> bool:
    value = cfg.get(key, default)
    if not isinstance(value, bool):
        raise ModelConfigError(f"{where}: field '{key}' must be true or false, got {value!r}")
    return value


def _layer_kinds(cfg: dict, layers: int, where: str, state_name: str, attention_name: str,
                 interval: int | None) -> tuple[bool, ...]:
    kinds = cfg.get("layer_types")
    if kinds is None and interval is not None:
        # transformers Qwen3NextConfig.__post_init__: every interval-th layer is full attention
        return tuple(bool((i + 1) % interval) for i in range(layers))
    valid = (state_name, attention_name)
    if (not isinstance(kinds, list) or len(kinds) != layers or any(k not in valid for k in kinds)):
        raise ModelConfigError(
            f"{where}: field 'layer_types' must list '{state_name}' or '{attention_name}' "
            f"for each of the {layers} layers")
    return tuple(k == state_name for k in kinds)


def _gated_deltanet(cfg: dict, where: str, layers: int) -> StateLayers:
    """vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py QwenGatedDeltaNetAttention."""
    interval = _int(cfg, "full_attention_interval", where, default=4)
    if interval > layers:
        raise ModelConfigError(f"{where}: full_attention_interval ({interval}) exceeds num_hidden_layers ({layers})")
    nk, nv = _int(cfg, "linear_num_key_heads", where), _int(cfg, "linear_num_value_heads", where)
    dk, dv = _int(cfg, "linear_key_head_dim", where), _int(cfg, "linear_value_head_dim", where)
    kernel = _int(cfg, "linear_conv_kernel_dim", where, default=4)
    if nv % nk:
        raise ModelConfigError(
            f"{where}: linear_num_value_heads ({nv}) must be a multiple of linear_num_key_heads ({nk})")
    h = _int(cfg, "hidden_size", where)
    key_dim, value_dim = nk * dk, nv * dv
    conv = 2 * key_dim + value_dim
    # in_proj_qkvz (q, k, v, z), in_proj_ba (beta, alpha per value head), depthwise conv1d
    # without bias, dt_bias and A_log per value head, gated RMS norm over a value head, out_proj
    params = h * (2 * key_dim + 2 * value_dim) + h * 2 * nv + conv * kernel + 2 * nv + dv + value_dim * h
    kinds = _layer_kinds(cfg, layers, where, "linear_attention", "full_attention", interval)
    return StateLayers("gated-deltanet", kinds, conv, kernel, nv, (dv, dk), 0, 0, params, 0)


def _mamba2(cfg: dict, where: str, layers: int) -> StateLayers:
    """vllm/model_executor/layers/mamba/mamba_mixer2.py MambaMixer2 as granitemoehybrid.py builds it."""
    h = _int(cfg, "hidden_size", where)
    expand = _int(cfg, "mamba_expand", where, default=2)
    heads = _int(cfg, "mamba_n_heads", where, default=128)
    inner = expand * h
    head_dim = cfg.get("mamba_d_head", "auto")
    head_dim = inner // heads if head_dim == "auto" else _int(cfg, "mamba_d_head", where)
    if heads * head_dim != inner:
        raise ModelConfigError(
            f"{where}: mamba_n_heads ({heads}) x mamba_d_head ({head_dim}) "
            f"must equal mamba_expand x hidden_size ({inner})")
    groups = _int(cfg, "mamba_n_groups", where, default=1)
    state = _int(cfg, "mamba_d_state", where, default=256)
    kernel = _int(cfg, "mamba_d_conv", where, default=4)
    conv_bias = _bool(cfg, "mamba_conv_bias", where, True)
    proj_bias = _bool(cfg, "mamba_proj_bias", where, False)
    conv = inner + 2 * groups * state
    # in_proj (z, x, B, C, dt), depthwise conv1d, A / D / dt_bias per head, gated RMS norm, out_proj
    params = (h * (inner + conv + heads) + (inner + conv + heads if proj_bias else 0)
              + conv * kernel + (conv if conv_bias else 0) + 3 * heads + inner
              + inner * h + (h if proj_bias else 0))
    return StateLayers("mamba2", _layer_kinds(cfg, layers, where, "mamba", "attention", None),
                       inner, kernel, heads, (head_dim, state), groups, 2 * state, params, 1)


def state_layers(cfg: dict, where: str, layers: int) -> StateLayers | None:
    """The state layers of a sized hybrid config, None for other models. Fields vLLM reads but
    this sizing does not follow are refused by name."""
    mt = cfg.get("model_type")
    if mt == "qwen3_next":
        if _int(cfg, "decoder_sparse_step", where, default=1) != 1 or cfg.get("mlp_only_layers"):
            key = "mlp_only_layers" if cfg.get("mlp_only_layers") else "decoder_sparse_step"
            raise UnsupportedArchitectureError(
                f"{where}: field '{key}' gives some Qwen3-Next layers a dense MLP instead of MoE; "
                "vLLM 0.32 builds them "
                "(qwen3_next.py), this sizing does not; supported: Qwen3-Next with MoE in every layer")
        state = _gated_deltanet(cfg, where, layers)
    elif mt == "granitemoehybrid":
        state = _mamba2(cfg, where, layers)
    else:
        return None
    if not any(state.layers):
        return None   # attention only (Granite 4.0 Micro): vLLM's is_hybrid is False, a plain transformer
    if all(state.layers):
        raise UnsupportedArchitectureError(
            f"{where}: field 'layer_types' has no attention layer: vLLM 0.32 then keeps only recurrent state, "
            "which this sizing does not model; supported: hybrids with at least one attention layer")
    return state

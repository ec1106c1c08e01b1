"""How vLLM sizes its CPU KV offload buffer for a `vllm serve` argument list, without starting workers.

Runs inside the engine venv. argv: KV cache bytes; stdin: JSON list of the arguments after
`vllm serve` (model first). Prints JSON: the kv_transfer_config vLLM derives from
--kv-offloading-size, and the block count and block bytes of vLLM's own CPUOffloadingSpec for the
KV cache config vLLM's own get_kv_cache_configs builds at that budget.

The engine config is built as `vllm serve` builds it (the serve parser, AsyncEngineArgs,
create_engine_config). The per-layer KV spec is the one a full-attention decoder layer reports
(vllm/model_executor/layers/attention: FullAttentionSpec of the model's KV heads, head size and
dtype) and the KV cache layout the engine core resolves for the CPU attention backend: this
script is for a full-attention tiny model only. The CPU platform's workers cannot
run the offload (CPUOffloadingSpec.get_worker), so this is as far as the CPU build goes."""

from __future__ import annotations

import contextlib
import json
import sys


def main() -> None:
    kv_bytes = int(sys.argv[1])
    args = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # keep vLLM's own prints off the JSON
        from vllm.distributed.kv_transfer.kv_connector.v1.offloading.config import build_offloading_config
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.utils.argparse_utils import FlexibleArgumentParser
        from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend
        from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts, resolve_kv_cache_layout
        from vllm.v1.core.kv_cache_utils import get_kv_cache_configs
        from vllm.v1.kv_cache_interface import FullAttentionSpec
        from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec

        top = FlexibleArgumentParser(prog="vllm")
        ServeSubcommand().subparser_init(top.add_subparsers(required=True, dest="subparser"))
        ns = top.parse_args(["serve", *args])
        ns.model = ns.model_tag
        config = AsyncEngineArgs.from_cli_args(ns).create_engine_config()
        model, parallel, cache = config.model_config, config.parallel_config, config.cache_config
        spec = FullAttentionSpec(block_size=cache.block_size, num_kv_heads=model.get_num_kv_heads(parallel),
                                 head_size=model.get_head_size(), dtype=model.dtype)
        layers = {f"model.layers.{i}.self_attn.attn": spec for i in range(model.get_num_layers(parallel))}
        # what the engine core resolves from the workers' attention backend (vllm/v1/engine/core.py)
        layouts = [layout.name for layout in get_supported_kv_cache_layouts([CPUAttentionBackend])]
        resolve_kv_cache_layout(config, [layouts], list(layers.values()))
        (kv_cache_config,) = get_kv_cache_configs(config, [layers], [kv_bytes])
        kt = config.kv_transfer_config
        offload = CPUOffloadingSpec(build_offloading_config(config, kv_cache_config))
    json.dump({"kv_connector": kt.kv_connector if kt else None, "kv_role": kt.kv_role if kt else None,
               "cpu_bytes_to_use": kt.kv_connector_extra_config.get("cpu_bytes_to_use") if kt else None,
               "block_size": cache.block_size, "blocks_per_chunk": offload.blocks_per_chunk,
               "num_chunks": offload.num_chunks, "kv_bytes_per_chunk": offload.kv_bytes_per_chunk,
               "gpu_page_bytes": spec.page_size_bytes, "layers": len(layers)}, sys.stdout)


if __name__ == "__main__":
    main()

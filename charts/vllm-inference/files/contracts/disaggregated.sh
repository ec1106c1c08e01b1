#!/bin/sh
# Image contract of topology disaggregated (RayService with prefill and decode pools; NIXL moves
# the KV cache between them).
# Usage: sh disaggregated.sh [efa] [nixl-libfabric] [s3-download]
#   efa             the pod has EFA interfaces (efa.devices > 0)
#   nixl-libfabric  a pool's kv_transfer_config selects NIXL's LIBFABRIC backend
#   s3-download     model.source s3: Ray Serve LLM downloads the weights with boto3
. "$(dirname "$0")/lib.sh"
ray_llm_contract disaggregated "efa nixl-libfabric s3-download" "$@"

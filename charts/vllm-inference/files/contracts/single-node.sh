#!/bin/sh
# Image contract of topology single-node (Deployment running `vllm serve`).
# Usage: sh single-node.sh [efa] [s3-stream]
#   efa        the pod has EFA interfaces (efa.devices > 0)
#   s3-stream  model.source s3: vLLM streams the weights with --load-format runai_streamer
. "$(dirname "$0")/lib.sh"
vllm_server_contract single-node "efa s3-stream" "$@"

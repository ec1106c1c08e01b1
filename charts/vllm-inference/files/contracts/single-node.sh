#!/bin/sh
# Image contract of topology single-node (Deployment running `vllm serve`).
# Usage: sh single-node.sh [efa]   (efa: the pod has EFA interfaces, efa.devices > 0)
. "$(dirname "$0")/lib.sh"
vllm_server_contract single-node "efa" "$@"

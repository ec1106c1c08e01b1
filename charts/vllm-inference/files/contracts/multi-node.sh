#!/bin/sh
# Image contract of topology multi-node (LeaderWorkerSet: `vllm serve` on the leader,
# `vllm serve --headless` on the workers).
# Usage: sh multi-node.sh [efa]   (efa: the pod has EFA interfaces, efa.devices > 0)
. "$(dirname "$0")/lib.sh"
vllm_server_contract multi-node "efa" "$@"

#!/bin/sh
# Image contract of topology single-node (Deployment running `vllm serve`).
# Usage: sh single-node.sh [efa]   (efa: the pod has EFA interfaces, efa.devices > 0)
. "$(dirname "$0")/lib.sh"
contract_begin single-node
VLLM="the vllm/vllm-openai images provide it (image.repository, image.tag)"
EFA="images/vllm-efa (EFA installer and aws-ofi-nccl on vllm/vllm-openai) provides it: set image.repository/image.tag to your build of it"
require_executable vllm "$VLLM"
require_python_module vllm "$VLLM"
for want in "$@"; do
    case "$want" in
        efa) require_libfabric "$EFA"; require_efa_provider "$EFA"; require_aws_ofi_nccl "$EFA" ;;
        *) contract_fail "a check named '$want' (valid: efa)" "fix the chart's contract arguments" ;;
    esac
done
contract_ok

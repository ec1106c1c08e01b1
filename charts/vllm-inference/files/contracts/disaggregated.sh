#!/bin/sh
# Image contract of topology disaggregated (RayService with prefill and decode pools; NIXL moves
# the KV cache between them).
# Usage: sh disaggregated.sh [efa] [nixl-libfabric]
#   efa             the pod has EFA interfaces (efa.devices > 0)
#   nixl-libfabric  a pool's kv_transfer_config selects NIXL's LIBFABRIC backend
. "$(dirname "$0")/lib.sh"
contract_begin disaggregated
RAY="the Ray LLM images provide it (ray.image: rayproject/ray-llm, or the AWS Ray LLM DLC public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0)"
DLC="the AWS Ray LLM DLC (public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0) provides it: set ray.image"
require_executable ray "$RAY"
require_python_module ray "$RAY"
require_python_module vllm "$RAY"
for want in "$@"; do
    case "$want" in
        efa) require_libfabric "$DLC"; require_efa_provider "$DLC"; require_aws_ofi_nccl "$DLC" ;;
        nixl-libfabric) require_nixl_libfabric_plugin "$DLC"; require_libfabric "$DLC" ;;
        *) contract_fail "a check named '$want' (valid: efa, nixl-libfabric)" "fix the chart's contract arguments" ;;
    esac
done
contract_ok

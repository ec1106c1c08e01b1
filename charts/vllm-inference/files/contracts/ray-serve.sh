#!/bin/sh
# Image contract of topology ray-serve (RayService: `ray start` on the head and the GPU workers,
# Ray Serve LLM running vLLM in the worker processes).
# Usage: sh ray-serve.sh [efa]
. "$(dirname "$0")/lib.sh"
contract_begin ray-serve
RAY="the Ray LLM images provide it (ray.image: rayproject/ray-llm, or the AWS Ray LLM DLC public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0)"
EFA="the AWS Ray LLM DLC (public.ecr.aws/deep-learning-containers/ray:serve-llm-cuda-v1.0.0) provides it: set ray.image"
require_executable ray "$RAY"
require_python_module ray "$RAY"
require_python_module vllm "$RAY"
for want in "$@"; do
    case "$want" in
        efa) require_libfabric "$EFA"; require_efa_provider "$EFA"; require_aws_ofi_nccl "$EFA" ;;
        *) contract_fail "a check named '$want' (valid: efa)" "fix the chart's contract arguments" ;;
    esac
done
contract_ok

#!/bin/sh
# Image contract of topology ray-serve (RayService: KubeRay starts Ray on the head and the GPU
# workers, Ray Serve LLM runs vLLM in the worker processes).
# Usage: sh ray-serve.sh [efa] [s3-download]
#   efa          the pod has EFA interfaces (efa.devices > 0)
#   s3-download  model.source s3: Ray Serve LLM downloads the weights with boto3
. "$(dirname "$0")/lib.sh"
ray_llm_contract ray-serve "efa s3-download" "$@"

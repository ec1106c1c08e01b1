#!/bin/sh
# Image contract of topology ray-serve (RayService: KubeRay starts Ray on the head and the GPU
# workers, Ray Serve LLM runs vLLM in the worker processes).
# Usage: sh ray-serve.sh [efa]
. "$(dirname "$0")/lib.sh"
ray_llm_contract ray-serve "efa" "$@"

#!/usr/bin/env bash
# `make e2e-kind`: create a kind cluster, run pytest with the arguments given against it (the kind
# tier, TEST_ARGS_kind in mk/kind.mk: CRDs, charts with the GPU-less profile, a completion through
# the Service via `helm test`), delete the cluster. Needs a running container engine; fails (never
# pretends) without one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
kind="${KIND:?KIND (path of the kind binary) must be set}"
pytest="${PYTEST:?PYTEST must be set}"
name="${KIND_CLUSTER:-vllm-eks-e2e}"

engine=""
for e in docker podman nerdctl; do
  if command -v "$e" >/dev/null && "$e" info >/dev/null 2>&1; then engine="$e"; break; fi
done
if [[ -z "$engine" ]]; then
  echo "e2e-kind: no container engine (docker/podman/nerdctl) answers here; kind cannot create a cluster." >&2
  exit 1
fi
[[ "$engine" == docker ]] || export KIND_EXPERIMENTAL_PROVIDER="$engine"

kubeconfig="$(mktemp)"
cleanup() { "$kind" delete cluster --name "$name" --kubeconfig "$kubeconfig" >/dev/null 2>&1 || true; rm -f "$kubeconfig"; }
trap cleanup EXIT
"$kind" create cluster --name "$name" --kubeconfig "$kubeconfig" --wait 180s ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
cd "$root"
VLLM_EKS_KIND_KUBECONFIG="$kubeconfig" "$pytest" "$@" -v -rs

#!/usr/bin/env bash
# Build the cluster tier's binaries from their Go modules into $CLUSTER_BIN (default
# .tools/cluster/bin): kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd,
# kwok (kwokctl on request), KEDA's operator and metrics adapter, the KubeRay operator (ray-operator),
# the LeaderWorkerSet controller (lws-controller) and the Prometheus Operator.
#
# Each binary is reused when a stamp file records the same version and build inputs; a binary
# already on PATH is linked instead of built when its `--version` reports the pinned version.
# Builds run one at a time (-p ${GO_BUILD_P:-2}) because the machines running this are small.
#
# Usage: tools/cluster/build.sh [name...]   (default: all)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
out="${CLUSTER_BIN:-$root/.tools/cluster/bin}"
mkdir -p "$out"

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:--mod=mod}"
p="${GO_BUILD_P:-2}"

k8s_minor="${K8S_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
build_date="$(date -u -d @"${SOURCE_DATE_EPOCH:-0}" +%Y-%m-%dT%H:%M:%SZ)"

# Kubernetes reads its version from ldflags (hack/lib/version.sh); without them `--version` says
# v0.0.0-master, Helm's kubeVersion check and kwokctl's version parsing then misbehave.
k8s_ldflags() {
  local commit="$1" pkg flags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
    flags+=" -X $pkg.gitCommit=$commit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
  done
  echo "$flags"
}

# The commit of the pinned tag, from the module proxy's origin record (empty when unknown).
module_commit() {
  (cd "$here/$1" && go mod download -json "$2" 2>/dev/null |
    sed -n 's/.*"Hash": "\([0-9a-f]\{40\}\)".*/\1/p' | head -1)
}

# What `<bin> --version` must print for a binary on PATH (or in $out) to be accepted as is.
expected_version() {
  case "$1" in
    kube-apiserver|kube-controller-manager|kube-scheduler) echo "Kubernetes $K8S_VERSION" ;;
    kubectl) echo "Client Version: $K8S_VERSION" ;;
    etcd) echo "etcd Version: ${ETCD_VERSION#v}" ;;
    kwok|kwokctl) echo "${KWOK_VERSION#v}" ;;
    *) echo "" ;;
  esac
}

version_of() {
  case "$1" in
    kubectl) "$2" version --client 2>/dev/null | head -1 ;;
    *) "$2" --version 2>/dev/null | head -3 | tr '\n' ' ' ;;
  esac
}

# A module directory: tools/cluster/<mod>, or an absolute path (an upstream module's own tree).
mod_dir() { if [[ "$1" == /* ]]; then echo "$1"; else echo "$here/$1"; fi; }

stamp_of() {
  # Inputs that change the binary: its pin, the module's go.sum, the Go toolchain and the flags.
  local name="$1" mod="$2" ver="$3" flags="$4" dir
  dir="$(mod_dir "$mod")"
  printf '%s %s %s %s %s\n' "$name" "$ver" "$(go env GOVERSION)" \
    "$(sha256sum "$dir/go.mod" "$dir/go.sum" | sha256sum | cut -c1-16)" \
    "$(printf '%s' "$flags" | sha256sum | cut -c1-16)"
}

# Controllers the tests run beside the control plane (KEDA, KubeRay) reconcile a few dozen
# objects, so how fast their code runs does not matter, while compiling them is most of a new
# machine's build time: they are compiled without optimisation or inlining, which took 29% less
# CPU than the default on etcd (169 s -> 121 s). Same source, same behaviour; the control plane
# itself keeps upstream's optimised build.
CONTROLLER_GCFLAGS="all=-N -l"

built=()
summary=()

build_one() {
  local name="$1" mod="$2" pkg="$3" ver="$4" flags="$5" gcflags="${6:-}"
  local target="$out/$name" stamp="$out/.$name.stamp" want
  want="$(stamp_of "$name" "$mod" "$ver" "$flags${gcflags:+ $gcflags}")"
  if [[ -x "$target" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    summary+=("$name $ver: reused $target")
    return
  fi
  local onpath expect
  onpath="$(PATH="${PATH//$out:/}" command -v "$name" 2>/dev/null || true)"
  expect="$(expected_version "$name")"
  if [[ -n "$onpath" && "$onpath" != "$target" && -n "$expect" ]] &&
     version_of "$name" "$onpath" | grep -qF "$expect"; then
    ln -sf "$onpath" "$target"
    echo "$want" > "$stamp"
    summary+=("$name $ver: using $onpath from PATH")
    return
  fi
  echo ">>> building $name $ver ($pkg, module ${mod#"$root/"}, CGO_ENABLED=0 -trimpath -p $p)"
  local t0=$SECONDS
  local dir
  dir="$(mod_dir "$mod")"
  [[ -f "$dir/go.mod" ]] || { echo "build.sh: no go.mod in $dir (building $name)" >&2; exit 1; }
  (cd "$dir" && go build -p "$p" -trimpath ${gcflags:+-gcflags "$gcflags"} -ldflags "$flags" -o "$target.tmp" "$pkg")
  mv "$target.tmp" "$target"
  echo "$want" > "$stamp"
  local dt=$((SECONDS - t0))
  echo "<<< built $name in ${dt}s: $(version_of "$name" "$target")"
  built+=("$name")
  summary+=("$name $ver: built in ${dt}s")
}

# kwokctl is not built by default: the tier runs its own control plane and only takes kwokctl's
# Stages from the module (below); `build.sh kwokctl` still builds it.
want_all=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok keda-operator keda-adapter
          ray-operator lws-controller prometheus-operator)

# KEDA is built in its own module's source tree (the proxy's zip, unpacked in GOMODCACHE), with
# its own go.mod/go.sum and -mod=readonly: its replace block (k8s.io/* v0.35.x, controller-runtime,
# prometheus, cel-go) then applies exactly as upstream's `make build` applies it. `go install
# pkg@version` refuses a module with replace directives, and a consumer module would have to
# repeat that block by hand.
keda_dir() {
  GOFLAGS=-mod=mod go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" |
    sed -n 's/.*"Dir": "\(.*\)".*/\1/p'
}

# The LeaderWorkerSet controller is built the same way, in sigs.k8s.io/lws's own tree: its go.mod
# has no replace block, but a consumer module would only repeat its requirements.
lws_download() { GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/lws@$LWS_VERSION"; }
lws_dir() { lws_download | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'; }
lws_commit() { lws_download | sed -n 's/.*"Hash": "\([0-9a-f]\{40\}\)".*/\1/p' | head -1; }

# The Prometheus Operator builds from tools/cluster/prometheus-operator (its own tree's replace
# directives point at directories its module zip leaves out); its CRDs come from the module tree.
prometheus_operator_dir() {
  GOFLAGS=-mod=mod go mod download -json \
    "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
    sed -n 's/.*"Dir": "\(.*\)".*/\1/p'
}

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${want_all[@]}")

k8s_flags=""
want_kuberay_crds=""
total0=$SECONDS
for name in "${names[@]}"; do
  case "$name" in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl)
      if [[ -z "$k8s_flags" ]]; then
        k8s_flags="$(k8s_ldflags "$(module_commit k8s "k8s.io/kubernetes@$K8S_VERSION")")"
      fi
      build_one "$name" k8s "k8s.io/kubernetes/cmd/$name" "$K8S_VERSION" "$k8s_flags" ;;
    etcd)
      # etcd's version is a constant in go.etcd.io/etcd/api/v3/version, nothing to inject.
      build_one etcd etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "-s -w" ;;
    kwok|kwokctl)
      build_one "$name" kwok "sigs.k8s.io/kwok/cmd/$name" "$KWOK_VERSION" \
        "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}" ;;
    keda-operator|keda-adapter)
      # Upstream's Makefile sets version.Version (printed in the operator's start-up log).
      [[ -n "${kdir_keda:-}" ]] || kdir_keda="$(keda_dir)"
      GOFLAGS=-mod=readonly build_one "$name" "$kdir_keda" "./cmd/${name#keda-}" "$KEDA_VERSION" \
        "-s -w -X github.com/kedacore/keda/v2/version.Version=${KEDA_VERSION#v}" "$CONTROLLER_GCFLAGS" ;;
    lws-controller)
      # Upstream's Makefile stamps pkg/version (printed by --version and in the start-up log).
      [[ -n "${kdir_lws:-}" ]] || { kdir_lws="$(lws_dir)"; commit_lws="$(lws_commit)"; }
      GOFLAGS=-mod=readonly build_one lws-controller "$kdir_lws" ./cmd "$LWS_VERSION" \
        "-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=$LWS_VERSION -X sigs.k8s.io/lws/pkg/version.GitCommit=$commit_lws -X sigs.k8s.io/lws/pkg/version.BuildDate=$build_date" \
        "$CONTROLLER_GCFLAGS" ;;
    prometheus-operator)
      # Upstream's Makefile sets prometheus/common's version.Version (the operator logs it).
      [[ -n "${pdir_promop:-}" ]] || pdir_promop="$(prometheus_operator_dir)"
      build_one prometheus-operator prometheus-operator github.com/prometheus-operator/prometheus-operator/cmd/operator "$PROMETHEUS_OPERATOR_VERSION" \
        "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_OPERATOR_VERSION#v}" "$CONTROLLER_GCFLAGS" ;;
    ray-operator)
      # The operator's version is a constant (controllers/ray/utils KUBERAY_VERSION), nothing to
      # inject. Its main package is the module root.
      build_one ray-operator kuberay github.com/ray-project/kuberay/ray-operator "$KUBERAY_VERSION" "-s -w" \
        "$CONTROLLER_GCFLAGS"
      want_kuberay_crds=1 ;;
    *) echo "unknown binary '$name'; known: ${want_all[*]} kwokctl" >&2; exit 2 ;;
  esac
done

# kwok v0.8.0 has no built-in Stages: the controller needs them in its --config. Take the ones
# kwokctl itself uses (node initialize + heartbeat with lease, pod ready/complete/delete) from the
# pinned module, so the simulated kubelet behaves as upstream documents.
stages="$out/../kwok-stages.yaml"
if [[ ! -s "$stages" || "$(head -1 "$stages")" != "# kwok $KWOK_VERSION stages" ]]; then
  kdir="$(cd "$here/kwok" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
    sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  {
    echo "# kwok $KWOK_VERSION stages"
    for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
             pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
      echo "---"
      cat "$kdir/kustomize/stage/$f"
    done
  } > "$stages.tmp"
  mv "$stages.tmp" "$stages"
  summary+=("kwok stages: $stages")
fi

# KEDA's own CRDs (ScaledJob, ClusterTriggerAuthentication, CloudEventSource...), which its
# operator watches next to the pinned ScaledObject and TriggerAuthentication CRDs.
if [[ -n "${kdir_keda:-}" ]]; then
  kcrds="$out/../keda-crds"
  if [[ "$(cat "$kcrds/VERSION" 2>/dev/null)" != "$KEDA_VERSION" ]]; then
    rm -rf "$kcrds" && mkdir -p "$kcrds"
    cp "$kdir_keda"/config/crd/bases/*.yaml "$kcrds/"
    chmod u+w "$kcrds"/*.yaml
    echo "$KEDA_VERSION" > "$kcrds/VERSION"
    summary+=("keda CRDs: $kcrds")
  fi
fi

# The operator runs against its own CRDs (a v1.5.0 operator with v1.7.0 CRDs is not what users
# run): copy them from the pinned module's config/crd/bases into .tools/cluster/kuberay-crds.
crds="$out/../kuberay-crds"
if [[ -n "$want_kuberay_crds" && "$(cat "$crds/VERSION" 2>/dev/null)" != "$KUBERAY_VERSION" ]]; then
  kdir="$(cd "$here/kuberay" && go mod download -json "github.com/ray-project/kuberay/ray-operator@$KUBERAY_VERSION" |
    sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  rm -rf "$crds.tmp" && mkdir -p "$crds.tmp"
  cp "$kdir"/config/crd/bases/ray.io_*.yaml "$crds.tmp/"
  chmod u+w "$crds.tmp"/*
  echo "$KUBERAY_VERSION" > "$crds.tmp/VERSION"
  rm -rf "$crds" && mv "$crds.tmp" "$crds"
  summary+=("kuberay CRDs $KUBERAY_VERSION: $crds")
fi

# The controller's own CRDs (LeaderWorkerSet and DisaggregatedSet, both of which it watches) and
# its webhook manifests (config/webhook/manifests.yaml: paths and rules) from the pinned module
# into .tools/cluster/lws/, for the controller test alone; the render tier and the other tests keep
# the pinned LeaderWorkerSet CRD in $VLLM_EKS_CRD_DIR.
if [[ -n "${kdir_lws:-}" ]]; then
  lws_files="$out/../lws"
  if [[ "$(cat "$lws_files/VERSION" 2>/dev/null)" != "$LWS_VERSION" ]]; then
    rm -rf "$lws_files.tmp" && mkdir -p "$lws_files.tmp/crds"
    cp "$kdir_lws"/config/crd/bases/*.yaml "$lws_files.tmp/crds/"
    cp "$kdir_lws"/config/webhook/manifests.yaml "$lws_files.tmp/webhook-manifests.yaml"
    chmod -R u+w "$lws_files.tmp"
    echo "$LWS_VERSION" > "$lws_files.tmp/VERSION"
    rm -rf "$lws_files" && mv "$lws_files.tmp" "$lws_files"
    summary+=("lws CRDs and webhook manifests $LWS_VERSION: $lws_files")
  fi
fi

# The Prometheus Operator's own CRDs: the pinned monitors and rules plus the Prometheus kind (and the others
# it watches), all from the same module version.
if [[ -n "${pdir_promop:-}" ]]; then
  pcrds="$out/../prometheus-operator-crds"
  if [[ "$(cat "$pcrds/VERSION" 2>/dev/null)" != "$PROMETHEUS_OPERATOR_VERSION" ]]; then
    rm -rf "$pcrds" && mkdir -p "$pcrds"
    cp "$pdir_promop"/example/prometheus-operator-crd/monitoring.coreos.com_*.yaml "$pcrds/"
    chmod u+w "$pcrds"/*.yaml
    echo "$PROMETHEUS_OPERATOR_VERSION" > "$pcrds/VERSION"
    summary+=("prometheus-operator CRDs: $pcrds")
  fi
fi

echo "cluster tools in $out (total $((SECONDS - total0))s):"
printf '  %s\n' "${summary[@]}"

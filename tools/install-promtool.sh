#!/usr/bin/env bash
# Make promtool available as DEST (a symlink), installing Debian's `prometheus` package if no
# promtool is on PATH. Only promtool is wanted: the Prometheus server that the package also
# ships must not be left running (it would hold port 9090 that the engine tier's own
# Prometheus uses), so service start-up is blocked during the install and the service is
# stopped and disabled afterwards should it have started anyway.
#
# Usage: install-promtool.sh DEST
set -euo pipefail
[ "$#" -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 2; }
dest=$1
mkdir -p "$(dirname "$dest")"
own_dir=$(cd "$(dirname "$dest")" && pwd -P)

find_promtool() {
  local dir
  IFS=: read -r -a dirs <<<"${PATH:-}"
  for dir in "${dirs[@]}" /usr/bin; do
    [ -n "$dir" ] && [ -d "$dir" ] || continue
    [ "$(cd "$dir" && pwd -P)" = "$own_dir" ] && continue
    if [ -x "$dir/promtool" ] && [ ! -d "$dir/promtool" ]; then
      printf '%s\n' "$dir/promtool"
      return 0
    fi
  done
  return 1
}

if found=$(find_promtool); then
  [ "$(readlink "$dest" 2>/dev/null || true)" = "$found" ] || ln -sfn "$found" "$dest"
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "error: promtool is not on PATH; install it (Debian/Ubuntu: apt-get install prometheus," >&2
  echo "       or a Prometheus release tarball) and re-run make setup" >&2
  exit 1
fi

# policy-rc.d exit 101 = "action forbidden": invoke-rc.d then starts no service during the
# install (Debian policy, /usr/share/doc/init-system-helpers/README.policy-rc.d).
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 0755 "$policy"
  created_policy=1
fi
cleanup() { [ "$created_policy" -eq 1 ] && rm -f "$policy"; return 0; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
echo "promtool: apt-get install prometheus"
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus >/dev/null

# Belt and braces: if a service manager started the server anyway, stop and disable it.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now prometheus >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus ]; then
  /etc/init.d/prometheus stop >/dev/null 2>&1 || true
  command -v update-rc.d >/dev/null 2>&1 && update-rc.d prometheus disable >/dev/null 2>&1 || true
fi

found=$(find_promtool) || { echo "error: prometheus installed but no promtool found" >&2; exit 1; }
ln -sfn "$found" "$dest"
echo "promtool: $("$found" --version 2>&1 | head -n1)"

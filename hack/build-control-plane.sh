#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager)
# of one pinned Kubernetes release from the Go module proxy into bin/k8s/.
# With --node it also builds what a real node and a whole control plane
# add (kube-scheduler, kubelet, kube-proxy) and the kubectl of the same
# release, for the cluster test
# (make test-cluster). Each binary already built at the pinned version is
# reused.
#
# Usage: hack/build-control-plane.sh [--node] [OUTDIR]
set -euo pipefail

binaries=(kube-apiserver kube-controller-manager)
if [[ "${1:-}" == "--node" ]]; then
  binaries+=(kube-scheduler kubelet kube-proxy kubectl)
  shift
fi

K8S_VERSION="${K8S_VERSION:-v1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
# The staging modules (k8s.io/api, ...) are published as v0.<minor>.<patch>.
STAGING_VERSION="v0.${K8S_VERSION#v1.}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/bin/k8s}"
work="$root/bin/.build"
# Finished binaries are also kept in a per-machine cache, so a fresh clone
# on the same machine (as CI is) copies them instead of building again.
cache="${SCION_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/scion}/control-plane"
mkdir -p "$out" "$work" "$cache"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

step() { printf '==> %s\n' "$*"; }
fail() { printf 'error: %s\n' "$*" >&2; exit 1; }

# built NAME VERSION: true when OUTDIR/NAME exists and was built at VERSION,
# copying it from the machine cache when only the cache has it.
built() {
  local name="$1" version="$2"
  if [[ -x "$out/$name" && -f "$out/.$name.version" && "$(cat "$out/.$name.version")" == "$version" ]]; then
    [[ -x "$cache/$version/$name" ]] || stamp "$name" "$version"
    return 0
  fi
  if [[ -x "$cache/$version/$name" ]]; then
    cp "$cache/$version/$name" "$out/$name.tmp" && mv "$out/$name.tmp" "$out/$name"
    echo "$version" >"$out/.$name.version"
    return 0
  fi
  return 1
}
# stamp NAME VERSION records a fresh build in OUTDIR and in the cache.
stamp() {
  echo "$2" >"$out/.$1.version"
  mkdir -p "$cache/$2"
  cp "$out/$1" "$cache/$2/$1.tmp" && mv "$cache/$2/$1.tmp" "$cache/$2/$1"
}

# --- etcd ------------------------------------------------------------------
if built etcd "$ETCD_VERSION"; then
  step "etcd $ETCD_VERSION already built"
else
  step "building etcd $ETCD_VERSION"
  ed="$work/etcd"
  rm -rf "$ed" && mkdir -p "$ed"
  printf 'module scion.local/etcd\n\ngo 1.26\n' >"$ed/go.mod"
  cat >"$ed/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$ed" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2>&1 | grep -v '^go: downloading' || true)
  (cd "$ed" && go mod tidy >/dev/null 2>&1 && go build -trimpath -o "$out/etcd" .) || fail "building etcd $ETCD_VERSION failed (log above)"
  stamp etcd "$ETCD_VERSION"
fi

# --- kube-apiserver, kube-controller-manager (and the node's) ---------------
need=()
for bin in "${binaries[@]}"; do
  if built "$bin" "$K8S_VERSION"; then step "$bin $K8S_VERSION already built"; else need+=("$bin"); fi
done
if ((${#need[@]})); then
  kd="$work/kubernetes"
  rm -rf "$kd" && mkdir -p "$kd"
  printf 'module scion.local/kubernetes\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n' "$K8S_VERSION" >"$kd/go.mod"
  step "downloading k8s.io/kubernetes $K8S_VERSION"
  info="$(cd "$kd" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" || true)"
  if grep -q '"Error"' <<<"$info"; then
    fail "cannot download k8s.io/kubernetes $K8S_VERSION from the module proxy: $(sed -n 's/.*"Error": "\(.*\)".*/\1/p' <<<"$info")"
  fi
  modfile="$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' <<<"$info")"
  # k8s.io/kubernetes refers to its staging modules through relative replace
  # directives; map each of them to its published release instead.
  grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$modfile" | awk '{print $1}' | sort -u | while read -r m; do
    printf 'replace %s => %s %s\n' "$m" "$m" "$STAGING_VERSION"
  done >>"$kd/go.mod"
  for bin in "${need[@]}"; do
    step "building $bin $K8S_VERSION (several minutes on two cores; the kubelet about five)"
    (cd "$kd" && go build -trimpath -o "$out/$bin" "k8s.io/kubernetes/cmd/$bin") || fail "building $bin failed (log above)"
    stamp "$bin" "$K8S_VERSION"
  done
fi
step "control plane ready in $out"

#!/usr/bin/env bash
# Builds the test control plane (etcd, kube-apiserver, kube-controller-manager)
# of one pinned Kubernetes release from the Go module proxy into bin/k8s/.
# Binaries that are already present at the pinned version are reused.
#
# Usage: hack/build-control-plane.sh [OUTDIR]
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
# The staging modules (k8s.io/api, ...) are published as v0.<minor>.<patch>.
STAGING_VERSION="v0.${K8S_VERSION#v1.}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/bin/k8s}"
work="$root/bin/.build"
mkdir -p "$out" "$work"
stamp="$out/.version"
want="k8s=$K8S_VERSION etcd=$ETCD_VERSION"

have_all() {
  [[ -x "$out/etcd" && -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" ]] &&
    [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]
}

if have_all; then
  echo "control plane $want already built in $out"
  exit 0
fi

step() { printf '==> %s\n' "$*"; }
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0

# --- etcd ------------------------------------------------------------------
step "building etcd $ETCD_VERSION"
ed="$work/etcd"
rm -rf "$ed" && mkdir -p "$ed"
cat >"$ed/go.mod" <<MOD
module scion.local/etcd

go 1.26
MOD
cat >"$ed/main.go" <<'GO'
package main

import "go.etcd.io/etcd/server/v3/etcdmain"

func main() { etcdmain.Main(nil) }
GO
(cd "$ed" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null && go mod tidy >/dev/null && go build -trimpath -o "$out/etcd" .)

# --- kube-apiserver and kube-controller-manager -----------------------------
step "building kube-apiserver and kube-controller-manager $K8S_VERSION (this takes several minutes)"
kd="$work/kubernetes"
rm -rf "$kd" && mkdir -p "$kd"
cat >"$kd/go.mod" <<MOD
module scion.local/kubernetes

go 1.26

require k8s.io/kubernetes $K8S_VERSION
MOD
# k8s.io/kubernetes refers to its staging modules through relative replace
# directives; map each of them to its published release instead.
modfile="$(cd "$kd" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$modfile" | awk '{print $1}' | sort -u | while read -r m; do
  printf 'replace %s => %s %s\n' "$m" "$m" "$STAGING_VERSION"
done >>"$kd/go.mod"
cat >"$kd/tools.go" <<'GO'
//go:build tools

package tools
GO
(cd "$kd" &&
  go build -trimpath -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver &&
  go build -trimpath -o "$out/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager)

echo "$want" >"$stamp"
step "control plane ready in $out"

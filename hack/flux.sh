#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller, at the version
# below, from their own Go modules as the Go module proxy serves them, each
# in a tools module of its own outside this one (Flux's Kubernetes
# libraries are not Scion's), into DIR (bin/flux): the executables, and
# their CRDs under DIR/crds (from the modules' config/crd/bases). Tests
# (test/flux, test/cluster) and make demo run them; nothing of Flux is
# linked into Scion. A controller already built at this version is kept.
#
# Each tools module carries the controller's own replace lines (its go.mod
# at that version), plus fluxcd/pkg/artifact v0.18.0 for source-controller:
# the newer version its go.mod asks for is not served here. Flux v1.9.6
# needs a newer Go than this machine's for some of its dependencies, which
# GOTOOLCHAIN fetches from the proxy.
set -euo pipefail
out=$(realpath -m "${1:-bin/flux}")
VERSION=v1.9.6
export GOTOOLCHAIN=go1.27.3 CGO_ENABLED=0 GOFLAGS=-mod=mod
mkdir -p "$out/crds"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DIGEST='github.com/opencontainers/go-digest=github.com/opencontainers/go-digest@v1.0.1-0.20220411205349-bde1400a84be'
for name in source-controller kustomize-controller; do
  stamp="$out/.$name.version"
  if [[ -x "$out/$name" ]] && [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$VERSION" ]] && compgen -G "$out/crds/${name%-controller}*.yaml" >/dev/null; then
    continue
  fi
  echo "==> building Flux's $name $VERSION"
  mod="$work/$name"
  mkdir -p "$mod"
  (
    cd "$mod"
    go mod init "scion.local/flux/$name" >/dev/null 2>&1
    replaces=(-replace="$DIGEST")
    case "$name" in
      source-controller)
        replaces+=(-replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.0) ;;
      kustomize-controller)
        replaces+=(-replace=sigs.k8s.io/kustomize/api=sigs.k8s.io/kustomize/api@v0.21.1
                   -replace=sigs.k8s.io/kustomize/kyaml=sigs.k8s.io/kustomize/kyaml@v0.21.1
                   -replace=gopkg.in/yaml.v3=gopkg.in/yaml.v3@v3.0.1) ;;
    esac
    go mod edit "${replaces[@]}"
    go get -tool "github.com/fluxcd/$name@$VERSION" >"$mod/log" 2>&1 || { cat "$mod/log"; exit 1; }
    go build -trimpath -ldflags="-s -w" -o "$out/$name" "github.com/fluxcd/$name"
    src=$(go list -m -f '{{.Dir}}' "github.com/fluxcd/$name")
    install -m 0644 "$src"/config/crd/bases/*.yaml "$out/crds/"
  )
  echo "$VERSION" > "$stamp"
done
echo "==> Flux $VERSION ready in $out"

#!/usr/bin/env bash
# Builds the kpt function catalog's functions that Scion has builtins for
# from their own Go modules (as served by the Go module proxy), each in a
# module of its own outside this one, into DIR (bin/catalog): static
# executables that test/functions makes FROM-scratch images of
# (image.ForFunction) to compare with Scion's builtins. DIR/VERSIONS lists
# "name version module source" per function, source being the module's
# folder in the module cache (test/functions reads the catalog's own test
# cases from its _test.go files); a function already built at its version,
# whose source is still there, is kept.
#
# The proxy serves these versions (and no set-labels, set-annotations or
# set-image source: docs/functions.md says so). Three are served under the
# catalog's former path, github.com/GoogleContainerTools/kpt-functions-catalog,
# with go.mod files naming the new one: they are required by the new path
# and replaced by the old. The checksum database does not know the
# catalog's modules, so they are not looked up there (GONOSUMDB); their
# sums are those the proxy served.
set -euo pipefail
out=$(realpath -m "${1:-bin/catalog}")
mkdir -p "$out"
NEW=github.com/kptdev/krm-functions-catalog/functions/go
OLD=github.com/GoogleContainerTools/kpt-functions-catalog/functions/go
FUNCTIONS=(
  "set-namespace v0.4.5 new"
  "apply-setters v0.2.2 new"
  "apply-replacements v0.1.5 new"
  "starlark v0.5.5 new"
  "search-replace v0.2.4 old"
  "ensure-name-substring v0.2.4 old"
  "upsert-resource v0.2.4 old"
)
export CGO_ENABLED=0 GOFLAGS=-mod=mod GONOSUMDB=github.com/kptdev,github.com/GoogleContainerTools GOTOOLCHAIN=local
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: > "$out/VERSIONS.new"
for f in "${FUNCTIONS[@]}"; do
  read -r name version where <<<"$f"
  stamp="$out/.$name.version"
  if [[ -x "$out/$name" ]] && [[ -f "$stamp" ]]; then
    read -r built src <"$stamp"
    if [[ "$built" == "$version" ]] && [[ -d "$src" ]]; then
      echo "$name $version $NEW/$name $src" >> "$out/VERSIONS.new"
      continue
    fi
  fi
  echo "==> building the catalog's $name $version"
  mod="$work/$name"
  mkdir -p "$mod"
  (
    cd "$mod"
    go mod init "scion.local/catalog/$name" >/dev/null 2>&1
    if [[ "$where" == old ]]; then
      go mod edit -require="$NEW/$name@$version" -replace="$NEW/$name=$OLD/$name@$version"
    fi
    go get -tool "$NEW/$name@$version" >"$mod/log" 2>&1 || { cat "$mod/log"; exit 1; }
    go build -trimpath -ldflags="-s -w" -o "$out/$name" "$NEW/$name"
    echo "$version $(go list -m -f '{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}' "$NEW/$name")" > "$stamp"
  )
  read -r _ src <"$stamp"
  echo "$name $version $NEW/$name $src" >> "$out/VERSIONS.new"
done
mv "$out/VERSIONS.new" "$out/VERSIONS"

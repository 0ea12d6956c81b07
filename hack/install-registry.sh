#!/usr/bin/env bash
# Installs Debian's docker-registry (the distribution project's OCI
# registry) for the tests of packages in OCI registries (internal/oci,
# scion pkg push/pull), unless it is there (or SCION_REGISTRY names one).
# The tests start their own registry processes; the package's service is
# not used.
set -euo pipefail
if [[ -n "${SCION_REGISTRY:-}" ]] || [[ -x /usr/bin/docker-registry ]]; then
  exit 0
fi
echo "==> installing docker-registry (Debian's package) for the OCI registry tests"
SUDO=""
if [[ "$(id -u)" != "0" ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq docker-registry >/dev/null
# The package starts its service where there is a service manager; the
# tests need none on :5000.
$SUDO systemctl disable --now docker-registry >/dev/null 2>&1 || true

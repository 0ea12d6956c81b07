#!/usr/bin/env bash
# Installs Debian's podman and runc, which run KRM function images on this
# kind of machine (the tests of real function images: test/functions),
# unless both are there. The settings podman needs here (Debian's runc,
# cgroupfs, ulimits a container may set) are the project's own:
# hack/podman/containers.conf, which the Makefile gives podman through
# CONTAINERS_CONF; the machine's configuration is not changed.
set -euo pipefail
if command -v podman >/dev/null 2>&1 && [[ -x /usr/sbin/runc ]]; then
  exit 0
fi
echo "==> installing podman and runc (Debian's packages) for the function image tests"
SUDO=""
if [[ "$(id -u)" != "0" ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq podman runc >/dev/null

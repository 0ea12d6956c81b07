#!/usr/bin/env bash
# Installs Debian's Chromium for the console's browser tests (test/console),
# unless a Chromium is already there (or SCION_CHROMIUM names one).
set -euo pipefail
if [[ -n "${SCION_CHROMIUM:-}" ]] || command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "==> installing chromium (Debian's package) for the browser tests"
SUDO=""
if [[ "$(id -u)" != "0" ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null

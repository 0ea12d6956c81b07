#!/usr/bin/env bash
# Installs Debian's openssh-server for the tests of git over ssh
# (internal/store, test/e2e), unless sshd is there. The tests start their
# own sshd processes on loopback ports with configurations of their own;
# the package's service is stopped and disabled, so nothing listens on
# port 22 because of this script.
set -euo pipefail
if [[ -x /usr/sbin/sshd ]]; then
  exit 0
fi
echo "==> installing openssh-server (Debian's package) for the git-over-ssh tests"
SUDO=""
if [[ "$(id -u)" != "0" ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
# No service started by the installation where there is no service
# manager to ask (policy-rc.d), and none left running where there is.
had_policy=0
if [[ -e /usr/sbin/policy-rc.d ]]; then had_policy=1; fi
if [[ $had_policy == 0 ]]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openssh-server >/dev/null || { [[ $had_policy == 0 ]] && $SUDO rm -f /usr/sbin/policy-rc.d; exit 1; }
if [[ $had_policy == 0 ]]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
$SUDO systemctl disable --now ssh >/dev/null 2>&1 || true
$SUDO systemctl disable --now ssh.socket >/dev/null 2>&1 || true

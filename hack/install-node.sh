#!/usr/bin/env bash
# Installs what the test node (internal/testutil/cluster, make
# test-cluster) runs besides the Kubernetes binaries: Debian's containerd,
# runc, CNI plugins, docker-registry, iptables and iproute2, unless they
# are there. The node runs its own containerd and registry with its own
# configuration; the packages' services are not used.
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1 || [[ -x "/usr/sbin/$1" ]]; }
have containerd || need+=(containerd)
have runc || need+=(runc)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
have docker-registry || need+=(docker-registry)
have iptables || need+=(iptables)
have ip || need+=(iproute2)
have nsenter || need+=(util-linux)
if ((${#need[@]} == 0)); then
  exit 0
fi
echo "==> installing ${need[*]} (Debian's packages) for the test node"
SUDO=""
if [[ "$(id -u)" != "0" ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
# Where a service manager started them, the node needs neither.
$SUDO systemctl disable --now containerd docker-registry >/dev/null 2>&1 || true

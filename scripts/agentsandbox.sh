#!/usr/bin/env bash
# The kubernetes test cluster's agent-sandbox controller
# (kubernetes-sigs/agent-sandbox: Sandbox, SandboxTemplate, SandboxClaim,
# SandboxWarmPool), built on this machine and cached (idempotent; a binary
# already there is reused):
#   - builds cmd/agent-sandbox-controller of sigs.k8s.io/agent-sandbox at
#     $version from the Go module proxy with its own go.mod (go install
#     pkg@version: none of its dependencies enter ours) into
#     $TRIAGE_SANDBOX_AGENT_SANDBOX_DIR (default
#     /var/cache/triage-sandbox/agent-sandbox/<version>/); the first build
#     takes about 6 min on 2 cores (module downloads included);
#   - copies its CRDs beside it (crds/*.yaml), which the test cluster kit
#     applies before it starts the controller as a host process
#     (backends/testkit/kubecluster/agentsandbox.go).
# Prints the directory holding the binary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh
ts_log_prefix=agent-sandbox

# The version backends/kubernetes speaks (agentsandbox_types.go cites it).
version=v1.0.1
dir=${TRIAGE_SANDBOX_AGENT_SANDBOX_DIR:-/var/cache/triage-sandbox/agent-sandbox/$version}

build() {
  GOBIN="$dir/bin.tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
    "sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller@$version"
  mod=$(go env GOMODCACHE)/sigs.k8s.io/agent-sandbox@$version
  mkdir -p "$dir/crds"
  cp "$mod"/k8s/crds/*.yaml "$dir/crds/"
  chmod u+w "$dir"/crds/*.yaml
  mv "$dir/bin.tmp/agent-sandbox-controller" "$dir/agent-sandbox-controller"
  rmdir "$dir/bin.tmp"
}
mkdir -p "$dir"
if [ ! -x "$dir/agent-sandbox-controller" ] || ! ls "$dir"/crds/*.yaml >/dev/null 2>&1; then
  ts_timed "building agent-sandbox-controller $version into $dir" "about 6 min on 2 cores the first time (downloads included), cached after" build
fi
echo "$dir"

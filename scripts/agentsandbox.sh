#!/usr/bin/env bash
# The kubernetes test cluster's agent-sandbox controller
# (kubernetes-sigs/agent-sandbox: Sandbox, SandboxTemplate, SandboxClaim,
# SandboxWarmPool), built on this machine and cached (idempotent; a binary
# already there is reused):
#   - downloads sigs.k8s.io/agent-sandbox at $version from the Go module
#     proxy and builds its cmd/agent-sandbox-controller in the module's own
#     directory, with its own go.mod and go.sum (none of its dependencies
#     enter ours) into
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
  mod=$(go mod download -json "sigs.k8s.io/agent-sandbox@$version" | awk -F'"' '$2 == "Dir" {print $4}')
  [ -n "$mod" ] && [ -d "$mod/k8s/crds" ] || { ts_log "go mod download gave no directory of sigs.k8s.io/agent-sandbox@$version with k8s/crds"; return 1; }
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/agent-sandbox-controller.tmp" ./cmd/agent-sandbox-controller)
  mkdir -p "$dir/crds"
  for f in "$mod"/k8s/crds/*.yaml; do
    cat "$f" >"$dir/crds/${f##*/}"
  done
  mv "$dir/agent-sandbox-controller.tmp" "$dir/agent-sandbox-controller"
}
mkdir -p "$dir"
if [ ! -x "$dir/agent-sandbox-controller" ] || [ -z "$(ls "$dir"/crds/*.yaml 2>/dev/null)" ]; then
  ts_timed "building agent-sandbox-controller $version into $dir" "about 6 min on 2 cores the first time (downloads included), cached after" build
fi
echo "$dir"

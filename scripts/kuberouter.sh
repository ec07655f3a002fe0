#!/usr/bin/env bash
# The kubernetes test cluster's NetworkPolicy controller, built on this
# machine and cached (idempotent; a binary already there is reused):
#   - builds kube-router at the version scripts/kuberouter/go.mod pins
#     (github.com/cloudnativelabs/kube-router/v2 from the Go module proxy)
#     into $TRIAGE_SANDBOX_KUBE_ROUTER_DIR (default
#     /var/cache/triage-sandbox/kube-router/<version>/); the first build
#     takes about 8 min on 2 cores (module downloads included), later runs reuse the cache.
# The test node runs only its firewall, with its iptables and ipset
# commands inside the node's own network namespace
# (backends/testkit/kubecluster/policy.go); Debian's iptables and ipset
# come with ts_kube_packages.
# Prints the directory holding the binary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh
ts_log_prefix=kube-router

version=$(awk '$1 == "require" && $2 == "github.com/cloudnativelabs/kube-router/v2" {print $3}' scripts/kuberouter/go.mod)
[ -n "$version" ] || { ts_log "scripts/kuberouter/go.mod names no github.com/cloudnativelabs/kube-router/v2 version"; exit 1; }
dir=${TRIAGE_SANDBOX_KUBE_ROUTER_DIR:-/var/cache/triage-sandbox/kube-router/$version}

build() {
  (cd scripts/kuberouter && CGO_ENABLED=0 go build -trimpath -o "$dir/kube-router.tmp" \
    -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$version" \
    github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
  mv "$dir/kube-router.tmp" "$dir/kube-router"
}
mkdir -p "$dir"
if [ ! -x "$dir/kube-router" ]; then
  ts_timed "building kube-router $version into $dir" "about 8 min on 2 cores the first time (downloads included), cached after" build
fi
echo "$dir"

#!/usr/bin/env bash
# gVisor for the kubernetes backend's test node, built on this machine and
# cached (idempotent; a binary already there is reused):
#   - builds runsc and its containerd shim (containerd-shim-runsc-v1) at
#     the version scripts/gvisor/go.mod pins (gvisor.dev/gvisor, the Go
#     branch served by the Go module proxy) into $TRIAGE_SANDBOX_GVISOR_DIR
#     (default /var/cache/triage-sandbox/gvisor/<version>/); the first build
#     takes about 3.5 CPU-minutes (runsc 2.8, the shim 0.8 more), later
#     runs reuse the cache.
# Debian's runsc (TRIAGE_SANDBOX_GVISOR=1 scripts/setup.sh) stays what the
# docker and oci backends run: it has no containerd shim, and containerd's
# runc shim driving runsc never reports an init container's exit to the
# kubelet, so the node's gvisor RuntimeClass runs these instead.
# Prints the directory holding the binaries on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh
ts_log_prefix=gvisor

version=$(awk '$1 == "require" && $2 == "gvisor.dev/gvisor" {print $3}' scripts/gvisor/go.mod)
[ -n "$version" ] || { ts_log "scripts/gvisor/go.mod names no gvisor.dev/gvisor version"; exit 1; }
dir=${TRIAGE_SANDBOX_GVISOR_DIR:-/var/cache/triage-sandbox/gvisor/$version}

mkdir -p "$dir"
for b in runsc:gvisor.dev/gvisor/runsc containerd-shim-runsc-v1:gvisor.dev/gvisor/shim; do
  name=${b%%:*} pkg=${b#*:}
  [ -x "$dir/$name" ] && continue
  ts_log "building $name $version into $dir (cached afterwards)"
  (cd scripts/gvisor && CGO_ENABLED=0 go build -trimpath -o "$dir/$name.tmp" \
    -ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=$version" "$pkg")
  mv "$dir/$name.tmp" "$dir/$name"
done
echo "$dir"

#!/usr/bin/env bash
# gVisor for the kubernetes backend's test node, built on this machine and
# cached (idempotent; a binary already there is reused):
#   - builds runsc at the version scripts/gvisor/go.mod pins
#     (gvisor.dev/gvisor, the Go branch served by the Go module proxy) into
#     $TRIAGE_SANDBOX_GVISOR_DIR (default
#     /var/cache/triage-sandbox/gvisor/<version>/); the first build takes
#     about 3 CPU-minutes, later runs reuse the cache.
# Debian's runsc (TRIAGE_SANDBOX_GVISOR=1 scripts/setup.sh) stays what the
# docker and oci backends run. gVisor's containerd shim is not built: it
# cannot start where CAP_SYS_RESOURCE is withheld, as on this VM (see
# backends/testkit/kubecluster/runsc.go), so the node's runc shim drives
# runsc.
# Prints the directory holding the binary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh
ts_log_prefix=gvisor

version=$(awk '$1 == "require" && $2 == "gvisor.dev/gvisor" {print $3}' scripts/gvisor/go.mod)
[ -n "$version" ] || { ts_log "scripts/gvisor/go.mod names no gvisor.dev/gvisor version"; exit 1; }
dir=${TRIAGE_SANDBOX_GVISOR_DIR:-/var/cache/triage-sandbox/gvisor/$version}

mkdir -p "$dir"
# A failed build leaves its output's end in $dir/build-error, which the
# tests quote (kubecluster.GVisorMissing); a good one removes it.
if [ ! -x "$dir/runsc" ]; then
  ts_log "building runsc $version into $dir (about 6 to 10 min on 2 cores the first time, cached after)"
  if ! out=$(cd scripts/gvisor && CGO_ENABLED=0 go build -trimpath -o "$dir/runsc.tmp" \
    -ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=$version" gvisor.dev/gvisor/runsc 2>&1); then
    printf '%s\n' "$out" >&2
    printf '%s\n' "$out" | tail -n 5 > "$dir/build-error"
    ts_log "building runsc failed: $(tail -n 1 "$dir/build-error")"
    exit 1
  fi
  mv "$dir/runsc.tmp" "$dir/runsc"
  ts_log "built runsc in $(ts_duration "$SECONDS")"
fi
rm -f "$dir/build-error"
echo "$dir"

#!/usr/bin/env bash
# The cluster the kubernetes backend's tests run against, made on this
# machine and cached (idempotent; each step is skipped when already done):
#   - installs etcd-server, containerd and containernetworking-plugins from
#     Debian if missing,
#   - builds kube-apiserver and kubelet at the version scripts/kube/go.mod
#     pins (k8s.io/kubernetes from the Go module proxy, its staging modules
#     replaced by their releases) into $TRIAGE_SANDBOX_KUBE_DIR
#     (default /var/cache/triage-sandbox/kube/<version>/); the first build
#     takes about 20 minutes on 2 cores, later runs reuse the cache,
#   - builds gVisor's runsc for the node's gvisor RuntimeClass
#     (scripts/gvisor.sh, cached the same way; jq from Debian edits each
#     container's spec for it). A build that fails does not stop the rest:
#     gvisor.sh keeps its reason, and the gvisor tests fail with it.
#   - builds kube-router, the node's NetworkPolicy controller
#     (scripts/kuberouter.sh, cached the same way; iptables and ipset from
#     Debian).
# Prints the directory holding the binaries on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh
ts_log_prefix=kube

version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' scripts/kube/go.mod)
[ -n "$version" ] || { ts_log "scripts/kube/go.mod names no k8s.io/kubernetes version"; exit 1; }
dir=${TRIAGE_SANDBOX_KUBE_DIR:-/var/cache/triage-sandbox/kube/$version}

# shellcheck disable=SC2046 # one package name a word
ts_install_packages $(ts_kube_packages)

mkdir -p "$dir"
# build_kube builds one of the cluster's binaries into the cache.
build_kube() {
  (cd scripts/kube && CGO_ENABLED=0 go build -trimpath -o "$dir/$1.tmp" \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version" "k8s.io/kubernetes/cmd/$1")
  mv "$dir/$1.tmp" "$dir/$1"
}
# Expected times: a fresh machine's first build on 2 cores (kube-apiserver
# compiles most of Kubernetes, 40 min at load 20-30; the kubelet reuses
# much of it).
for b in kube-apiserver:"about 20 to 40 min" kubelet:"about 5 min"; do
  name=${b%%:*}
  [ -x "$dir/$name" ] && continue
  ts_timed "building $name $version into $dir" "${b#*:} on 2 cores the first time, cached after" build_kube "$name"
done
# gVisor for the node: built once (about 6 minutes of wall time on 2
# cores), cached afterwards.
if ! scripts/gvisor.sh >/dev/null; then
  ts_log "runsc was not built (see above); the cluster's other tests still run, the gvisor RuntimeClass's fail saying why"
fi
# The NetworkPolicy controller: built once (about 8 min on 2 cores),
# cached afterwards.
if ! scripts/kuberouter.sh >/dev/null; then
  ts_log "kube-router was not built (see above); the network policy tests fail saying so"
fi
echo "$dir"

#!/usr/bin/env bash
# The tests' machine set-up (scripts/test.sh runs it, then the tests):
# the main job's (scripts/setup.sh) and what only the tests need, each step
# cached and skipped when already done:
#   - every Debian package both need, in one apt-get call: the main job's,
#     runc (the oci backend), python3-pytest (the real-project test),
#     podman (the docker backend's test against Podman), nodejs and npm,
#     and the kubernetes test cluster's (etcd-server, containerd,
#     containernetworking-plugins, jq),
#   - scripts/setup.sh with bin/triage-sandbox-kube (TRIAGE_SANDBOX_KUBE=1),
#   - the kubernetes test cluster's kube-apiserver and kubelet, and gVisor's
#     runsc for its node (scripts/kube.sh, scripts/gvisor.sh: built once,
#     cached in /var/cache/triage-sandbox/),
#   - the agent-sandbox controller and its CRDs (scripts/agentsandbox.sh,
#     cached in /var/cache/triage-sandbox/agent-sandbox/),
#   - the sandbox image loaded into Podman's own store (Podman keeps its
#     storage in /var/lib/containers and, for the sandboxes' network "none",
#     touches no iptables rule or bridge of dockerd's),
#   - the MCP TypeScript SDK's client and typescript from the npm registry, so that no test
#     dials a public address (cmd/triage-sandbox mcp_test.go names the same
#     version).
# Each long step prints a line with its expected time, and how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh
ts_log_prefix=setup-tests

# shellcheck disable=SC2046 # one package name a word
ts_install_packages $(ts_main_packages) $(ts_kube_packages) $(ts_test_packages)
TRIAGE_SANDBOX_KUBE=1 scripts/setup.sh
scripts/kube.sh >/dev/null
# The agent-sandbox controller for the kubernetes backend's kubernetes_api
# = "agent-sandbox" tests (built once, cached).
scripts/agentsandbox.sh >/dev/null
ts_podman_image

mcp_sdk="@modelcontextprotocol/sdk@1.32.2"
npm_dir="${TMPDIR:-/tmp}/triage-sandbox-test-npm-$(id -u)/modelcontextprotocol+sdk@1.32.2"
if [ ! -f "$npm_dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
  mkdir -p "$npm_dir"
  ts_timed "installing $mcp_sdk from the npm registry" "about 10 s" \
    npm install --no-audit --no-fund --no-save --prefix "$npm_dir" "$mcp_sdk" >/dev/null
fi
# typescript for the checkout-writes test's real tsc build (cmd/triage-sandbox
# checkoutwrites_test.go looks in the same cache; the CI tier fails without it).
ts_dir="${XDG_CACHE_HOME:-$HOME/.cache}/triage-sandbox-test/typescript"
if [ ! -f "$ts_dir/node_modules/typescript/bin/tsc" ]; then
  mkdir -p "$ts_dir"
  ts_timed "installing typescript@5 from the npm registry" "about 10 s" \
    npm install --no-audit --no-fund --no-save --prefix "$ts_dir" typescript@5 >/dev/null
fi
ts_log "ready in $(ts_duration "$SECONDS")"

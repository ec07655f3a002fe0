#!/usr/bin/env bash
# The test command: set the machine up, then run every test against the real
# Docker daemon and the kubernetes test cluster (a missing daemon or
# cluster binary fails instead of skipping).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# What the tests take from the npm registry, installed here so that no test
# dials a public address: the MCP TypeScript SDK's client (cmd/triage-sandbox
# mcp_test.go names the same version).
mcp_sdk="@modelcontextprotocol/sdk@1.32.2"
npm_dir="${TMPDIR:-/tmp}/triage-sandbox-test-npm-$(id -u)/modelcontextprotocol+sdk@1.32.2"
if ! command -v npm >/dev/null; then
  apt-get install -y --no-install-recommends nodejs npm >/dev/null
fi
if [ ! -f "$npm_dir/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
  mkdir -p "$npm_dir"
  npm install --no-audit --no-fund --no-save --prefix "$npm_dir" "$mcp_sdk" >/dev/null
fi
# No Mac runs here: vet the macOS build (seatbelt) so a Linux-only call
# in a shared package is caught before the macOS workflow meets it.
GOOS=darwin go vet ./...
# The second binary (build tag kubernetes) compiles and vets clean too; its
# registry test runs here, its end-to-end selftest in backends/kubernetes.
go vet -tags kubernetes ./cmd/... ./backends/builtin
go test -count=1 -tags kubernetes ./backends/builtin
TRIAGE_SANDBOX_REQUIRE_DOCKER=1 TRIAGE_SANDBOX_REQUIRE_KUBE=1 go test -count=1 -timeout 30m ./... "$@"

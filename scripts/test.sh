#!/usr/bin/env bash
# The test command: set the machine up for the tests, then run every test
# against the real Docker daemon and the kubernetes test cluster (a missing
# daemon or cluster binary fails instead of skipping).
set -euo pipefail
cd "$(dirname "$0")/.."
# The main job's set-up and what only the tests need (the kubernetes test
# cluster's binaries, runsc, Podman, pytest, the MCP client), cached.
scripts/setup-tests.sh
# No Mac runs here: vet the macOS build (seatbelt) so a Linux-only call
# in a shared package is caught before the macOS workflow meets it.
GOOS=darwin go vet ./...
# The second binary (build tag kubernetes) compiles and vets clean too; its
# registry test runs here, its end-to-end selftest in backends/kubernetes.
go vet -tags kubernetes ./cmd/... ./backends/builtin
go test -count=1 -tags kubernetes ./backends/builtin
TRIAGE_SANDBOX_REQUIRE_DOCKER=1 TRIAGE_SANDBOX_REQUIRE_KUBE=1 go test -count=1 -timeout 30m ./... "$@"

#!/usr/bin/env bash
# The test command: set the machine up, then run every test against the real
# Docker daemon (a missing daemon fails instead of skipping).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
TRIAGE_SANDBOX_REQUIRE_DOCKER=1 go test -count=1 -timeout 20m ./... "$@"

#!/usr/bin/env bash
# Benchmarks behind the performance figures in the README (ratios and
# figures are meant to be read from one run on one machine):
#   - output pipeline throughput (in process) and the work on shown text,
#   - a command printing 1 GiB through `run --json`: peak RSS and MB/s,
#   - 32 concurrent runs: throughput and p50/p95 latency (logged by the test).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
go test -run '^$' -bench 'StreamPassThrough|CleanBlock' -benchtime 2s ./output/
go test -run '^$' -bench RunOutputFlood -benchtime 1x ./cmd/triage-sandbox/
TRIAGE_SANDBOX_REQUIRE_DOCKER=1 go test -count=1 -run 'TestConcurrentRuns|TestTimeoutToGone|TestInterruptAndKillLeaveNothing' -v \
  ./cmd/triage-sandbox/ ./backends/docker/ 2>&1 | grep -E '_test.go:[0-9]+: |^(ok|FAIL)'

#!/usr/bin/env bash
# The suite under a busy daemon, as on CI's machine: four unrelated
# containers keep running (and one is restarted every few seconds) while the
# full test suite runs N times in a row (default 5). Exit status is the
# first failing run's.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
scripts/setup-tests.sh
image=${SOAK_IMAGE:-triage-sandbox-base:bookworm}
docker image inspect "$image" >/dev/null 2>&1 || image=triage-sandbox:latest
label="io.example.unrelated=soak-$$"
ids=()
cleanup() {
  [ -n "${churn:-}" ] && kill "$churn" 2>/dev/null || true
  docker ps -aq --filter "label=$label" | xargs -r docker rm -f >/dev/null 2>&1 || true
}
trap cleanup EXIT
for i in 1 2 3 4; do
  ids+=("$(docker run -d --rm --network none --label "$label" "$image" sleep 3600)")
done
# Churn: an unrelated container comes and goes, so the daemon is never idle.
( while :; do docker run --rm --network none --label "$label" "$image" sleep 2 >/dev/null 2>&1 || true; done ) &
churn=$!
for n in $(seq 1 "$runs"); do
  echo "soak: run $n of $runs with $(docker ps -q --filter "label=$label" | wc -l) unrelated containers" >&2
  TRIAGE_SANDBOX_REQUIRE_DOCKER=1 go test -count=1 -timeout 20m ./...
done
echo "soak: $runs runs passed" >&2

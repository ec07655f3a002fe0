#!/usr/bin/env bash
# CI's benchmark mode: every benchmark script behind a README figure, each
# with N pairs or runs (default 2: CI runs them so none rots; read figures
# from a run with more), printing what each prints. It judges no figure:
# it fails only when a script cannot measure (a run failed, a set-up is
# missing), naming the script. Needs root, runc and a Docker daemon, as the
# tests do (scripts/setup-tests.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-2}
case $n in ''|*[!0-9]*|0) echo "bench-all: N $n: want a positive number" >&2; exit 2 ;; esac
failed=()
bench() {
  local name=$1; shift
  echo "== $name"
  local s=$SECONDS
  if "$@"; then echo "   ($((SECONDS - s)) s)"; else echo "bench-all: $name could not measure (exit $?)" >&2; failed+=("$name"); fi
}
bin=$(pwd)/bin
# First: the machine's own costs, the yardstick for every ratio below.
bench bench-machine.sh scripts/bench-machine.sh "$((n * 50))"
for b in local docker oci; do
  bench "bench-start.sh ($b)" env BACKEND=$b scripts/bench-start.sh "$n"
done
bench bench-warm.sh scripts/bench-warm.sh "$n"
bench bench-local.sh scripts/bench-local.sh "$n"
bench bench-cold.sh scripts/bench-cold.sh "$n"
bench bench-run.sh scripts/bench-run.sh "$n"
for b in oci docker; do
  bench "bench-sessions.sh $b" scripts/bench-sessions.sh "$b" "$((n * 5))"
done
# Against itself: the scripts run whole; a figure wants a baseline build.
bench bench-idle.sh scripts/bench-idle.sh "$bin" "$bin"
bench bench-selftest.sh scripts/bench-selftest.sh "$bin/triage-sandbox" 1 docker
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench-all: could not measure: ${failed[*]}" >&2
  exit 1
fi

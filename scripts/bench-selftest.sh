#!/usr/bin/env bash
# The selftest gate's time (both roles) per backend: this build (A) against
# a baseline build (B, e.g. main's binary), paired by farm-bench (A B A B
# ...). Read the A/B wall median from one run on one machine; the A and B
# medians are the figures, and both must have exited 0 in every run.
#
#   scripts/bench-selftest.sh BASELINE_BINARY [RUNS] [BACKEND ...]
#
# Backends: docker, oci (runc), local, gvisor (oci with runtime = "runsc").
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(readlink -f "${1:?usage: scripts/bench-selftest.sh BASELINE_BINARY [RUNS] [BACKEND ...]}")
n=${2:-5}
shift $(( $# < 2 ? $# : 2 ))
backends=("$@")
[ ${#backends[@]} -gt 0 ] || backends=(docker oci local gvisor)
bin=$(pwd)/bin/triage-sandbox
ws=$(mktemp -d)
gv=$(mktemp -d)
trap 'rm -rf "$ws" "$gv"' EXIT
printf '[sandbox]\nbackend = "oci"\nruntime = "runsc"\n' > "$gv/triage.toml"
cd "$ws" # a scratch workspace, as scripts/main.sh's gate has its own
for be in "${backends[@]}"; do
  args=(selftest --backend "$be")
  [ "$be" = gvisor ] && args=(selftest --config "$gv/triage.toml")
  echo "== selftest $be: A = this build, B = $base (wall s, median of $n pairs)"
  farm-bench -n "$n" --warmup 1 --timeout 3600 --vs "$base ${args[*]}" -- "$bin" "${args[@]}" 2>&1 |
    grep -E '^(A|B) exit|^(A|B) (wall|cpu) s|^A/B (wall|cpu)|^note: .*(exit|killed|left)' || true
done

#!/usr/bin/env bash
# The selftest gate's time (both roles) per backend: this build (A) against
# a baseline build (B, e.g. main's binary), interleaved A B A B ..., N pairs
# each (default 5). Prints the medians and the median of the pairs' A/B
# ratios: read the ratio from one run on one machine. A run that exits
# non-zero is named, and the script exits 1 at the end: a failing gate has
# no time worth quoting.
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
failed=0
# ms BINARY ARGS...: wall milliseconds of one run; a failed run is named.
ms() {
  local s e rc=0
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1 || rc=$?
  e=$(date +%s%N)
  [ "$rc" = 0 ] || echo "run failed (exit $rc): $*" >&2
  echo "$(( (e - s) / 1000000 )) $rc"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for be in "${backends[@]}"; do
  args=(selftest --backend "$be")
  [ "$be" = gvisor ] && args=(selftest --config "$gv/triage.toml")
  "$bin" "${args[@]}" >/dev/null 2>&1 || true # warm-up (the oci backend unpacks its image once)
  as=(); bs=(); rs=()
  for _ in $(seq 1 "$n"); do
    read -r a arc < <(ms "$bin" "${args[@]}")
    read -r b brc < <(ms "$base" "${args[@]}")
    [ "$arc" = 0 ] && [ "$brc" = 0 ] || failed=1
    as+=("$a"); bs+=("$b"); rs+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a/b}')")
  done
  printf 'selftest %s, %s pairs: A (this build) %s ms, B (%s) %s ms, A/B %s\n' \
    "$be" "$n" "$(median "${as[@]}")" "$base" "$(median "${bs[@]}")" "$(median "${rs[@]}")"
done
exit "$failed"

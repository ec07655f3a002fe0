#!/usr/bin/env bash
# The selftest gate's time (both roles) per backend: this build (A) against
# a baseline build (B, e.g. main's binary), interleaved A B A B ..., N pairs
# each (default 5). Prints per backend the medians in seconds and the
# median of the pairs' A/B ratios: read the ratio from one run on one
# machine. Every run's report (--json) must have the same check ids,
# verdicts and order as its pair's: a faster selftest that checks something
# else is no figure (the first difference is printed). A run that exits
# non-zero or differs is named, and the script exits 1 at the end: a
# failing gate has no time worth quoting.
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
# ms OUT BINARY ARGS...: wall milliseconds of one run, its --json report
# in OUT; a failed run is named.
ms() {
  local out=$1 s e rc=0
  shift
  s=$(date +%s%N)
  "$@" --json >"$out" 2>/dev/null || rc=$?
  e=$(date +%s%N)
  [ "$rc" = 0 ] || echo "run failed (exit $rc): $*" >&2
  echo "$(( (e - s) / 1000000 )) $rc"
}
# verdicts REPORT: each role's check ids and verdicts, in the report's order.
verdicts() { jq -r '.roles[] | .role as $r | .checks[] | "\($r) \(.id) \(.status)"' "$1"; }
# phases REPORT: each role's three longest parts, for where the time went.
phases() {
  jq -r '.roles[] | "\(.role): " + ([.phase_durations_ns | to_entries | sort_by(-.value) | .[:3][] | "\(.key) \(.value / 1e9 * 100 | round / 100) s"] | join(", "))' "$1"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
secs() { awk -v m="$1" 'BEGIN {printf "%.2f", m / 1000}'; }
for be in "${backends[@]}"; do
  args=(selftest --backend "$be")
  [ "$be" = gvisor ] && args=(selftest --config "$gv/triage.toml")
  "$bin" "${args[@]}" >/dev/null 2>&1 || true # warm-up (the oci backend unpacks its image once)
  as=(); bs=(); rs=()
  for i in $(seq 1 "$n"); do
    read -r a arc < <(ms "$ws/a.json" "$bin" "${args[@]}")
    read -r b brc < <(ms "$ws/b.json" "$base" "${args[@]}")
    [ "$arc" = 0 ] && [ "$brc" = 0 ] || failed=1
    if ! diff <(verdicts "$ws/b.json") <(verdicts "$ws/a.json") >"$ws/diff"; then
      echo "selftest $be pair $i: the reports differ in check ids, verdicts or order (< B, > A):" >&2
      head -5 "$ws/diff" >&2
      failed=1
    fi
    as+=("$a"); bs+=("$b"); rs+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a/b}')")
  done
  printf 'selftest %s, %s pairs: A (this build) %s s, B (%s) %s s, A/B %s\n' \
    "$be" "$n" "$(secs "$(median "${as[@]}")")" "$base" "$(secs "$(median "${bs[@]}")")" "$(median "${rs[@]}")"
  phases "$ws/a.json" | sed 's/^/  A last run, longest: /'
  phases "$ws/b.json" | sed 's/^/  B last run, longest: /'
done
exit "$failed"

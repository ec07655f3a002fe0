#!/usr/bin/env bash
# Idle session memory (issue 40), one run on this machine: for each backend
# (docker; oci and local as root), `run --session NAME -- true`, then, after
# a quiet while (default 3 s; the holder gives back what its set-up left
# resident after 1 s), the VmRSS of every process we add for the session:
# the keeper, its descendants (docker's watcher; a foreground runtime if
# any; local's helper) and docker's holder (under the runtime's shim, which
# is not ours and not counted). With two binary directories (A and B, each
# holding triage-sandbox, triage-sandbox-cli, triage-sandbox-inside) it
# pairs them, A then B per backend, and prints B/A of each total.
#   scripts/bench-idle.sh [BINDIR_A [BINDIR_B]]   (IDLE_WAIT=seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:-$(pwd)/bin}
b=${2:-}
wait=${IDLE_WAIT:-3}
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
backends=(docker)
[ "$(id -u)" = 0 ] && command -v runc >/dev/null && backends+=(oci)
[ "$(id -u)" = 0 ] && backends+=(local)
tree() { echo "$1"; for c in $(pgrep -P "$1"); do tree "$c"; done; }
# idle BINDIR BACKEND prints each process's RSS (kB) and, last, the total.
idle() {
  local bin=$1 be=$2 name="idle-$$-$RANDOM" total=0 pids keeper
  (cd "$ws" && "$bin/triage-sandbox" run --backend "$be" --session "$name" -- true >/dev/null 2>&1)
  sleep "$wait"
  keeper=$(pgrep -n -f "^$bin/triage-sandbox-cli __warm")
  pids=$(tree "$keeper")
  if [ "$be" = docker ]; then
    for c in $(docker ps -q --filter "label=io.triage-sandbox.parent-pid=$keeper"); do
      pids="$pids $(docker inspect -f '{{.State.Pid}}' "$c")"
    done
  fi
  for p in $pids; do
    r=$(awk '/^VmRSS/{print $2}' "/proc/$p/status")
    total=$((total + r))
    printf '  %-6s %6d kB  %s\n' "$be" "$r" "$(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-50)" >&2
  done
  (cd "$ws" && "$bin/triage-sandbox" session end "$name" >/dev/null 2>&1) || true
  echo "$total"
}
for be in "${backends[@]}"; do
  ta=$(idle "$a" "$be")
  if [ -z "$b" ]; then
    printf '%-6s idle session: %d kB\n' "$be" "$ta"
    continue
  fi
  tb=$(idle "$b" "$be")
  printf '%-6s idle session: A %d kB, B %d kB, B/A %.2f\n' "$be" "$ta" "$tb" "$(awk -v a="$ta" -v b="$tb" 'BEGIN{print b/a}')"
done

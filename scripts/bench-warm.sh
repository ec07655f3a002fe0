#!/usr/bin/env bash
# Warm sandboxes, interleaved, N each (default 10), medians and ratios from
# one run on this machine:
#   - a session command (`run --session`, the session already started)
#     against `docker exec` into a running container with the same hardening;
#   - a pooled reproducer (`[sandbox.reproducer] pool = 2`) against a cold
#     reproducer run on the same backend;
# on docker and, where it can run (root, runc), on oci; and the session
# command alone on local (root). `run --session` goes through the front's
# fast path (the session's keeper runs it); TRIAGE_SANDBOX_FAST=0 in the
# environment measures the CLI's path instead.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
bin=$(pwd)/bin/triage-sandbox
image=${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}
ws=$(mktemp -d); pw=$(mktemp -d)
name="bench-$$"
cid=""
cleanup() {
  (cd "$ws" && "$bin" session end "$name" >/dev/null 2>&1) || true
  (cd "$ws" && "$bin" session end "$name-oci" >/dev/null 2>&1) || true
  (cd "$ws" && "$bin" session end "$name-local" >/dev/null 2>&1) || true
  # The pools of this run's workspace (never by a signal: their pid is the
  # keeper host's, which holds the user's other keepers too).
  (cd "$pw" && "$bin" session end pool:reproducer >/dev/null 2>&1) || true
  [ -n "$cid" ] && docker rm -f "$cid" >/dev/null 2>&1 || true
  rm -rf "$ws" "$pw"
}
trap cleanup EXIT
mkdir -p "$pw/repros"
printf '[sandbox.reproducer]\npool = 2\n' > "$pw/triage.toml"
# mktemp -d makes 0700 directories the sandbox's identity cannot enter:
# every command would be refused (126) before it ran.
chmod 755 "$ws" "$pw"
# A run that fails is no figure: stop with its output.
ms() {
  local s e out
  s=$(date +%s%N)
  if ! out=$("$@" 2>&1); then echo "bench-warm: failed: $*" >&2; echo "$out" | tail -3 >&2; exit 1; fi
  e=$(date +%s%N)
  echo $(( (e - s) / 1000000 ))
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
cid=$(docker run -d --rm --network none --cap-drop ALL --security-opt no-new-privileges --read-only --init \
  --pids-limit 512 --memory 1g --memory-swap 1g --user 65534:65534 --tmpfs /tmp --tmpfs /home/sandbox "$image" sleep 3600)
backends=(docker)
if [ "$(id -u)" = 0 ] && command -v runc >/dev/null; then backends+=(oci); fi
for b in "${backends[@]}"; do
  sess="$name"; [ "$b" = oci ] && sess="$name-oci"
  (cd "$ws" && "$bin" run --backend "$b" --session "$sess" -- true >/dev/null 2>&1)   # start the session
  (cd "$pw" && "$bin" run --backend "$b" --role reproducer -- true >/dev/null 2>&1)   # start the pool
  sleep 2 # let the pool fill
  s=(); e=(); p=(); c=()
  for _ in $(seq 1 "$n"); do
    s+=("$(cd "$ws" && ms "$bin" run --backend "$b" --session "$sess" -- true)")
    e+=("$(ms docker exec "$cid" true)")
    p+=("$(cd "$pw" && ms "$bin" run --backend "$b" --role reproducer -- true)")
    c+=("$(cd "$ws" && ms "$bin" run --backend "$b" --role reproducer -- true)")
    sleep 0.3 # the pool refills off the critical path
  done
  sm=$(median "${s[@]}"); em=$(median "${e[@]}"); pm=$(median "${p[@]}"); cm=$(median "${c[@]}")
  echo "$b: session command ${sm} ms vs docker exec ${em} ms (ratio $(ratio "$sm" "$em")); pooled reproducer ${pm} ms vs cold ${cm} ms (ratio $(ratio "$pm" "$cm")); median of $n"
done
if [ "$(id -u)" = 0 ]; then
  sess="$name-local"
  (cd "$ws" && "$bin" run --backend local --session "$sess" -- true >/dev/null 2>&1)   # start the session
  s=(); e=()
  for _ in $(seq 1 "$n"); do
    s+=("$(cd "$ws" && ms "$bin" run --backend local --session "$sess" -- true)")
    e+=("$(ms docker exec "$cid" true)")
  done
  sm=$(median "${s[@]}"); em=$(median "${e[@]}")
  echo "local: session command ${sm} ms vs docker exec ${em} ms (ratio $(ratio "$sm" "$em")); median of $n"
fi

#!/usr/bin/env bash
# Start-up, paired in one run on this machine (scripts/pairtime: pairs
# A B A B ..., whole processes, the median of the pairs' ratios), N pairs
# each (default 20):
#   - `triage-sandbox version` (the front, bin/triage-sandbox) against an
#     empty static Go program built here;
#   - a session's `run -- true` (the front's fast path: the session's
#     keeper runs it) against `version`;
#   - the same session command through the CLI (TRIAGE_SANDBOX_FAST=0)
#     against the fast path;
#   - the session command against `docker exec` into a running container
#     with the same hardening (when a Docker daemon answers).
# The session is on $BACKEND (default local, which needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
backend=${BACKEND:-local}
bin=$(pwd)/bin/triage-sandbox
tmp=$(mktemp -d)
ws=$tmp/ws
sess="bench-start-$$"
cleanup() {
  (cd "$ws" 2>/dev/null && "$bin" session end "$sess" >/dev/null 2>&1) || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$ws"
chmod 755 "$tmp" "$ws"
# shellcheck source=scripts/emptygo.sh
. scripts/emptygo.sh
emptygo "$tmp/empty-go"
go build -o "$tmp/pairtime" ./scripts/pairtime
# A run that fails is no figure: stop with its output.
if ! out=$(cd "$ws" && "$bin" run --backend "$backend" --session "$sess" -- true 2>&1); then
  echo "bench-start: starting the session failed:" >&2; echo "$out" | tail -3 >&2; exit 1
fi
session=("$bin" run --backend "$backend" --session "$sess" -- true)
# A keeper keeps a compile only of inputs at least 2 s old (the workspace
# here was made just now; a real one was not): hostread.DefaultSettle.
sleep 2.1
# pair NAME A... @@ B...: A against B (@@, as a command holds --).
pair() {
  local name=$1; shift
  (cd "$ws" && "$tmp/pairtime" -n "$n" -name "$name" -- "$@")
}
pair "version vs an empty static Go program" "$bin" version @@ "$tmp/empty-go"
pair "session run true ($backend) vs version" "${session[@]}" @@ "$bin" version
pair "session run true ($backend): fast path vs the CLI's" "${session[@]}" @@ env TRIAGE_SANDBOX_FAST=0 "${session[@]}"
# The same session command against `docker exec` into a running container
# with the same hardening (what a user compares a session with; issue 40:
# <= 0.1x), when a daemon answers.
if docker info >/dev/null 2>&1; then
  cid=$(docker run -d --rm --network none --cap-drop ALL --security-opt no-new-privileges --read-only --init \
    --pids-limit 512 --memory 1g --memory-swap 1g --user 65534:65534 --tmpfs /tmp --tmpfs /home/sandbox \
    "${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}" sleep 3600)
  trap 'docker rm -f "$cid" >/dev/null 2>&1; cleanup' EXIT
  pair "session run true ($backend) vs docker exec true" "${session[@]}" @@ docker exec "$cid" true
fi

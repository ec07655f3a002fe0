#!/usr/bin/env bash
# The local backend's cost against bubblewrap with equivalent confinement
# (its own user, mount, pid, net, ipc, uts and cgroup namespaces; the host's
# /usr and /etc and the workspace read-only; fresh /proc, /dev, /tmp and
# HOME; no capabilities; the sandbox identity), paired A B A B, N pairs
# each (default 10); prints the median of the pairs' ratios and each side's
# median, from one run. bwrap is given no seccomp filter and no Landlock
# ruleset (it has neither built in), so the comparison flatters it.
#   - cold: `triage-sandbox run --backend local -- true`, a whole CLI
#     process with policy, gate, sandbox start, one command and removal;
#   - pooled (named as such): the same `run -- true` in a workspace whose
#     triage.toml keeps a pool of started local sandboxes (`pool = 2`): the
#     front hands the run to the pool's keeper (the fast path), which
#     compiles and compares its policy, takes a ready sandbox, runs the
#     command in it and discards it. Each pair is followed by an untimed
#     pause of PAUSE seconds (default 0.3) in which the pool refills, as
#     between an agent's commands; back to back, the refills' starts (about
#     a cold start each) compete with the runs for the CPU and the pool
#     empties;
#   - pooled through the CLI (TRIAGE_SANDBOX_FAST=0): the same pool, the
#     front handing the run to the full CLI, which attaches to the keeper:
#     the control that shows what the fast path saves (a ratio near the
#     pooled one would mean the fast path was not taken).
# Each `bwrap … true` is B, the yardstick; each figure is A/B.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
pause=${PAUSE:-0.3}
bin=$(pwd)/bin/triage-sandbox
command -v bwrap >/dev/null || { echo "bench-local: bwrap is not installed (apt-get install bubblewrap)" >&2; exit 2; }
tmp=$(mktemp -d)
ws=$tmp/cold
pw=$tmp/pooled
export TRIAGE_SANDBOX_WARM_DIR=$tmp/warm
cleanup() {
  (cd "$pw" 2>/dev/null && "$bin" session end pool:agent >/dev/null 2>&1) || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$ws" "$pw"
mkdir -m 0700 "$TRIAGE_SANDBOX_WARM_DIR"
# mktemp -d makes 0700 directories the sandbox's identity cannot enter.
chmod 755 "$tmp" "$ws" "$pw"
printf '[sandbox]\nbackend = "local"\n' >"$ws/triage.toml"
printf '[sandbox]\nbackend = "local"\npool = 2\n' >"$pw/triage.toml"
# The workspace after the tmpfs on /tmp, which would hide it (mktemp -d):
# bwrap mounts in order.
as=(--unshare-all --die-with-parent --new-session --cap-drop ALL --uid 65534 --gid 65534
  --ro-bind /usr /usr --ro-bind /etc /etc --proc /proc --dev /dev
  --tmpfs /tmp --tmpfs /home/sandbox --ro-bind "$ws" "$ws" --chdir "$ws")
for d in bin sbin lib lib64 lib32 libx32; do
  if [ -L "/$d" ]; then as+=(--symlink "$(readlink "/$d")" "/$d"); elif [ -d "/$d" ]; then as+=(--ro-bind "/$d" "/$d"); fi
done
# us DIR CMD...: CMD's wall time in DIR, in µs; a failed run is no figure.
us() {
  local dir=$1 s e
  shift
  s=$(date +%s%N)
  (cd "$dir" && "$@" >/dev/null 2>&1) || { echo "bench-local: failed in $dir: $*" >&2; (cd "$dir" && "$@") 2>&1 | tail -3 >&2; exit 1; }
  e=$(date +%s%N)
  echo $(((e - s) / 1000))
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# pair NAME PAUSE DIR A...: A in DIR against bwrap, n pairs, PAUSE seconds
# (untimed) after each pair.
pair() {
  local name=$1 wait=$2 dir=$3
  shift 3
  local ta=() tb=() r=()
  for _ in $(seq 1 "$n"); do
    local a b
    a=$(us "$dir" "$@")
    b=$(us "$ws" bwrap "${as[@]}" true)
    ta+=("$a"); tb+=("$b")
    r+=("$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f", a/b}')")
    sleep "$wait"
  done
  printf '%s: %.2f× bwrap (median of %d paired ratios; medians: %.1f ms against %.1f ms)\n' "$name" \
    "$(median "${r[@]}")" "$n" "$(awk -v u="$(median "${ta[@]}")" 'BEGIN {print u/1000}')" \
    "$(awk -v u="$(median "${tb[@]}")" 'BEGIN {print u/1000}')"
}
us "$ws" "$bin" run -- true >/dev/null
# The first pooled run starts the pool's keeper (the CLI's path) and
# notes the route the front takes from then on.
us "$pw" "$bin" run -- true >/dev/null
sleep 1
pair "local, cold: run -- true" 0 "$ws" "$bin" run -- true
pair "local, pooled (pool = 2, fast path): run -- true" "$pause" "$pw" "$bin" run -- true
pair "local, pooled through the CLI (TRIAGE_SANDBOX_FAST=0): run -- true" "$pause" "$pw" env TRIAGE_SANDBOX_FAST=0 "$bin" run -- true

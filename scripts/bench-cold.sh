#!/usr/bin/env bash
# Cold run on the oci backend against its anchor, a bare `runc run` of the
# same bundle, in pairs (ours, then bare; N pairs, default 10) in one run
# on this machine; prints both medians and the median of the pairs' ratios.
#
# What the bare run is: the config.json the oci backend wrote for a live
# `triage-sandbox run --backend oci` in the same workspace (copied while it
# runs; the holder's spec does not depend on the command), with three
# changes and nothing else:
#   - process.args is ["true"] instead of the holder (so the bare run has
#     no holder, no control channel, no command started through it, no
#     export, no audit: what the backend adds is exactly what the ratio
#     shows);
#   - the network namespace is a new one runc makes (lo down) instead of
#     the backend's own, made in the bundle before each start with lo up;
#   - the bundle's hosts and mask files are copies in the bare bundle.
# Same rootfs: the image root the backend unpacked once and leases from its
# cache (read-only, shared); neither side unpacks or prepares a root in the
# timed runs (the first, untimed run of ours unpacks it when missing). Same
# mounts, namespaces, seccomp filter, rlimits, cgroup limits, identity.
# Ours is the whole CLI process: front exec, config and policy, gate, the
# bundle's directory, netns and spec, `runc run` of the holder, the
# command, and the sandbox's removal; the bare run is the one `runc run`
# process (which deletes its container itself when it ends).
set -euo pipefail
# EPOCHREALTIME's decimal point.
export LC_ALL=C
cd "$(dirname "$0")/.."
n=${1:-10}
bin=$(pwd)/bin/triage-sandbox
[ "$(id -u)" = 0 ] || { echo "bench-cold: the oci backend needs root" >&2; exit 2; }
command -v runc >/dev/null || { echo "bench-cold: runc is not installed (apt-get install runc)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench-cold: python3 rewrites the bundle: install it" >&2; exit 2; }
ws=$(mktemp -d)
# The bare bundle and runc's state on /run, as the backend's are.
bare=$(mktemp -d -p /run bench-cold.XXXXXX)
cleanup() {
  for c in $(runc --root "$bare/state" list -q 2>/dev/null); do runc --root "$bare/state" delete --force "$c" >/dev/null 2>&1 || true; done
  rm -rf "$ws" "$bare"
}
trap cleanup EXIT
chmod 755 "$ws"
mkdir -p "$bare/bundle" "$bare/state"
(cd "$ws" && "$bin" run --backend oci -- true >/dev/null 2>&1) ||
  { echo "bench-cold: the oci backend cannot run here:" >&2; (cd "$ws" && "$bin" run --backend oci -- true) >&2 || true; exit 2; }

# The backend's bundle for this workspace: found by its ownership record's
# pid (the CLI's: the front execs it), copied while the sandbox holds.
(cd "$ws" && exec "$bin" run --backend oci -- sleep 3 >/dev/null 2>&1) &
cli=$!
src=""
for _ in $(seq 1 250); do
  src=$(grep -l "\"pid\":$cli," /run/triage-sandbox/oci/bundles/*/owner.json 2>/dev/null | head -1 || true)
  [ -n "$src" ] && [ -s "$(dirname "$src")/config.json" ] && break
  src=""; sleep 0.02
done
[ -n "$src" ] || { echo "bench-cold: no bundle of pid $cli under /run/triage-sandbox/oci/bundles within 5 s" >&2; exit 1; }
src=$(dirname "$src")
cp "$src/config.json" "$src/hosts" "$src/masked" "$bare/bundle/"
wait "$cli" || { echo "bench-cold: the run whose bundle was copied failed" >&2; exit 1; }
python3 - "$src" "$bare/bundle" <<'EOF'
import json, sys
old, new = sys.argv[1], sys.argv[2]
path = new + "/config.json"
c = json.load(open(path))
args = c["process"]["args"]
if len(args) < 2 or args[1] != "__hold":
    sys.exit("bench-cold: the copied bundle's process is not the holder: %r" % args[:2])
c["process"]["args"] = ["true"]
for m in c["mounts"]:
    if m.get("source", "").startswith(old + "/"):
        m["source"] = new + m["source"][len(old):]
for ns in c["linux"]["namespaces"]:
    if ns["type"] == "network":
        ns.pop("path", None)
out = json.dumps(c)
if old in out:
    sys.exit("bench-cold: the bare bundle still names the backend's bundle " + old)
open(path, "w").write(out)
EOF
runc --root "$bare/state" run --bundle "$bare/bundle" bench-cold-check >/dev/null 2>&1 ||
  { echo "bench-cold: the bare bundle does not run:" >&2; runc --root "$bare/state" run --bundle "$bare/bundle" bench-cold-check2 >&2 || true; exit 1; }

# A run that fails is no figure: stop with its output. The clock is bash's
# own (no `date` process, no output captured through a pipe, inside the
# timed span): at a bare run's 45 ms those added about 10 ms to each side
# and pulled the ratio toward 1.
out="$bare/out"
ms() {
  local s e
  s=$EPOCHREALTIME
  if ! "$@" >"$out" 2>&1; then echo "bench-cold: failed: $*" >&2; tail -3 "$out" >&2; exit 1; fi
  e=$EPOCHREALTIME
  awk -v s="$s" -v e="$e" 'BEGIN {printf "%.1f", (e - s) * 1000}'
}
ours=(); theirs=(); ratios=()
for i in $(seq 1 "$n"); do
  o=$(cd "$ws" && ms "$bin" run --backend oci -- true)
  t=$(ms runc --root "$bare/state" run --bundle "$bare/bundle" "bench-cold-$$-$i")
  ours+=("$o"); theirs+=("$t"); ratios+=("$(awk -v a="$o" -v b="$t" 'BEGIN {printf "%.3f", a/b}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "cold run on oci (runc), $n pairs: triage-sandbox run --backend oci -- true $(median "${ours[@]}") ms; bare runc run of the same bundle (process true, runc's own netns) $(median "${theirs[@]}") ms; pair ratio median $(median "${ratios[@]}")"

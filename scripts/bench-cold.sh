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
#
# Two more pairs, named as what they are, show where the rest lies:
#   - resident: the same cold sandbox (a new bundle, netns, `runc run` of
#     the holder, the command, the removal, the audit) started by a
#     process that is already running and holds the compiled policy: the
#     MCP server's one-off `run` tool (no session), which is how a harness
#     runs it; no front or CLI starts per run. Its client is a few lines of
#     JSON-RPC here, timing each call, paired with the bare run timed by
#     the same clock;
#   - Go floor: the bare bundle with a static empty Go program (built
#     here, bound read-only into it) as its process instead of `true`:
#     what a Go program's start costs inside this sandbox, the least any
#     Go holder adds;
#   - pooled (named as such, not a cold run): the same `run -- true` in a
#     workspace whose triage.toml keeps a pool of two started oci
#     sandboxes (`pool = 2`): the front hands the run to the pool's keeper,
#     which runs it in a started sandbox and starts its replacement, after
#     a pause of PAUSE seconds (default 0.3, untimed) in which the pool
#     refills, as bench-local.sh pairs pooled local against bwrap.
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
pw=$(mktemp -d)
pause=${PAUSE:-0.3}
# The bare bundle and runc's state on /run, as the backend's are.
bare=$(mktemp -d -p /run bench-cold.XXXXXX)
cleanup() {
  (cd "$pw" && TRIAGE_SANDBOX_WARM_DIR=$bare/warm "$bin" session end pool:agent >/dev/null 2>&1) || true
  for c in $(runc --root "$bare/state" list -q 2>/dev/null); do runc --root "$bare/state" delete --force "$c" >/dev/null 2>&1 || true; done
  rm -rf "$ws" "$pw" "$bare"
}
trap cleanup EXIT
chmod 755 "$ws" "$pw"
# The MCP server (below) takes its backend from the config, as a harness's
# does; the CLI's `--backend oci` names the same one.
printf '[sandbox]\nbackend = "oci"\n' >"$ws/triage.toml"
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

# Go floor: the bare bundle with an empty static Go program as its process.
if command -v go >/dev/null; then
  mkdir -p "$bare/floor"
  # shellcheck source=scripts/emptygo.sh
  . scripts/emptygo.sh
  emptygo "$bare/floor/empty-go"
  chmod 755 "$bare/floor" "$bare/floor/empty-go"
  mkdir -p "$bare/gobundle"
  cp "$bare/bundle/"* "$bare/gobundle/"
  python3 - "$bare/bundle" "$bare/gobundle" "$bare/floor" <<'EOF2'
import json, sys
old, new, floor = sys.argv[1], sys.argv[2], sys.argv[3]
path = new + "/config.json"
c = json.load(open(path))
c["process"]["args"] = ["/.bench-floor/empty-go"]
for m in c["mounts"]:
    if m.get("source", "").startswith(old + "/"):
        m["source"] = new + m["source"][len(old):]
c["mounts"].append({"destination": "/.bench-floor", "type": "bind", "source": floor, "options": ["rbind", "ro", "nosuid", "nodev"]})
open(path, "w").write(json.dumps(c))
EOF2
  gos=(); trues=(); gratios=()
  for i in $(seq 1 "$n"); do
    t=$(ms runc --root "$bare/state" run --bundle "$bare/bundle" "bench-cold-t-$$-$i")
    g=$(ms runc --root "$bare/state" run --bundle "$bare/gobundle" "bench-cold-g-$$-$i")
    trues+=("$t"); gos+=("$g"); gratios+=("$(awk -v a="$g" -v b="$t" 'BEGIN {printf "%.3f", a/b}')")
  done
  echo "Go floor, $n pairs: bare runc run with an empty static Go program as its process $(median "${gos[@]}") ms; with true $(median "${trues[@]}") ms; pair ratio median $(median "${gratios[@]}")"
else
  echo "bench-cold: Go floor not measured: go is not on PATH" >&2
fi

# Resident: the MCP server's one-off runs in the same workspace, paired
# with the bare run. A failed call is no figure.
python3 - "$bin" "$ws" "$bare" "$n" <<'EOF2'
import json, os, statistics, subprocess, sys, time
bin_, ws, bare, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
errlog = open(bare + "/mcp.err", "w")
srv = subprocess.Popen([bin_, "mcp"], cwd=ws, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog)
ids = iter(range(1, 1 << 30))

def fail(why):
    srv.kill()
    sys.exit("bench-cold: resident: " + why + "; the server said: " + open(bare + "/mcp.err").read()[-400:])

def send(method, params, notify=False):
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    if not notify:
        msg["id"] = next(ids)
    srv.stdin.write((json.dumps(msg) + "\n").encode())
    srv.stdin.flush()
    while not notify:
        line = srv.stdout.readline()
        if not line:
            fail("the server ended")
        r = json.loads(line)
        if r.get("id") == msg["id"]:
            return r

def one_off():
    r = send("tools/call", {"name": "run", "arguments": {"argv": ["true"]}})
    res = r.get("result") or {}
    if "error" in r or res.get("isError") or (res.get("structuredContent") or {}).get("exit_code") != 0:
        fail("a run of true did not exit 0: " + json.dumps(r)[:300])

runc = subprocess.run(["sh", "-c", "command -v runc"], capture_output=True, text=True).stdout.strip()
null = os.open(os.devnull, os.O_RDWR)
def bare_run(i):
    pid = os.posix_spawn(runc, ["runc", "--root", bare + "/state", "run", "--bundle", bare + "/bundle", "bench-cold-r-%d-%d" % (os.getpid(), i)],
                         os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, fd) for fd in (0, 1, 2)])
    if os.waitpid(pid, 0)[1] != 0:
        fail("the bare run failed")

send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench-cold", "version": "1"}})
send("notifications/initialized", {}, notify=True)
one_off()  # the server's first sandbox start, untimed
ours, theirs, ratios = [], [], []
for i in range(n):
    s = time.perf_counter(); one_off(); o = (time.perf_counter() - s) * 1000
    s = time.perf_counter(); bare_run(i); t = (time.perf_counter() - s) * 1000
    ours.append(o); theirs.append(t); ratios.append(o / t)
srv.stdin.close()
srv.wait()
print("resident (the MCP server's one-off run: a cold sandbox, no CLI start), %d pairs: run true %.1f ms; bare runc run %.1f ms; pair ratio median %.3f"
      % (n, statistics.median(ours), statistics.median(theirs), statistics.median(ratios)))
EOF2

# Pooled: the pool's keeper and its state in the bare run's directory. The
# first run starts the keeper (the CLI's path) and notes the route the
# front takes from then on; its refill is let finish before the pairs.
export TRIAGE_SANDBOX_WARM_DIR=$bare/warm
mkdir -m 0700 "$TRIAGE_SANDBOX_WARM_DIR"
printf '[sandbox]\nbackend = "oci"\npool = 2\n' >"$pw/triage.toml"
(cd "$pw" && ms "$bin" run -- true) >/dev/null
sleep 1
pooled=(); ptheirs=(); pratios=()
for i in $(seq 1 "$n"); do
  o=$(cd "$pw" && ms "$bin" run -- true)
  t=$(ms runc --root "$bare/state" run --bundle "$bare/bundle" "bench-cold-p-$$-$i")
  pooled+=("$o"); ptheirs+=("$t"); pratios+=("$(awk -v a="$o" -v b="$t" 'BEGIN {printf "%.3f", a/b}')")
  sleep "$pause"
done
echo "pooled (pool = 2, fast path; not a cold run), $n pairs: triage-sandbox run -- true $(median "${pooled[@]}") ms; bare runc run $(median "${ptheirs[@]}") ms; pair ratio median $(median "${pratios[@]}")"

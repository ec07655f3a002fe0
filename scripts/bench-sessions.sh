#!/usr/bin/env bash
# Idle agent sessions on one host (issue 40): scripts/bench-sessions.sh BACKEND N
#
# Starts N idle agent sessions (distinct names, one workspace) on BACKEND
# (docker, oci or local) through the real CLI, and prints the time to start
# them and the resident memory of every process they added, by pid: the
# keeper host, the docker watchers, the oci `runc run`s, the holders (the
# runtime's shim and the daemon excluded), in total and per session, and
# the processor time they take while idle (over IDLE_SECS, default 10). Then
# `session end --all`, and a check that nothing is left: containers with our
# label naming the host, oci/local state directories and cgroups owned by it,
# runc state, processes, sockets and records. Then the same N again, ended by
# a kill -9 of the keeper host instead, then `gc` (the contract after a kill:
# the lifelines end the sandboxes, the sweep removes their state), and the
# same check. Exits 1 when anything is left, 2 on bad arguments.
#
# Its own keepers' directory and state (TRIAGE_SANDBOX_WARM_DIR,
# XDG_STATE_HOME) keep other sessions of this user out of the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/bench-sessions.sh docker|oci|local N" >&2; exit 2; }
[ $# = 2 ] || usage
backend=$1 n=$2
case $backend in docker|oci|local) ;; *) echo "bench-sessions: backend $backend: want docker, oci or local" >&2; exit 2 ;; esac
case $n in ''|*[!0-9]*|0) echo "bench-sessions: N $n: want a positive number" >&2; exit 2 ;; esac

tmp=$(mktemp -d /tmp/tsb.XXXXXX) # short: a socket path is at most 108 bytes
export TRIAGE_SANDBOX_WARM_DIR=$tmp/w XDG_STATE_HOME=$tmp/state
bin=$tmp/bin/triage-sandbox
ws=$tmp/ws
mkdir -p "$tmp/bin" "$ws"
# mktemp -d makes 0700 directories the sandbox's identity cannot enter.
chmod 755 "$tmp" "$ws"
: > "$ws/triage.toml"
# As installed: the front as triage-sandbox, the CLI beside it, and the
# small inside binary the holders run.
CGO_ENABLED=0 go build -buildvcs=auto -o "$bin" ./cmd/triage-sandbox-front
CGO_ENABLED=0 go build -buildvcs=auto -o "$tmp/bin/triage-sandbox-cli" ./cmd/triage-sandbox
CGO_ENABLED=0 go build -buildvcs=auto -o "$tmp/bin/triage-sandbox-inside" ./cmd/triage-sandbox-inside
TRIAGE_SANDBOX_FAST=0 "$bin" version >/dev/null

hosts() { "$bin" session list --json 2>/dev/null | python3 -c 'import json,sys
print(" ".join(sorted({str(r["pid"]) for r in json.load(sys.stdin) or []})))'; }

cleanup() {
  (cd "$ws" && "$bin" session end --all >/dev/null 2>&1) || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_all NAME-PREFIX: N sessions, one after another; prints seconds.
start_all() {
  local s e i
  s=$(date +%s%N)
  for i in $(seq 1 "$n"); do
    if ! out=$(cd "$ws" && "$bin" run --backend "$backend" --session "$1-$i" -- true 2>&1); then
      echo "bench-sessions: starting session $1-$i failed:" >&2; echo "$out" | tail -3 >&2; exit 1
    fi
  done
  e=$(date +%s%N)
  awk -v ns=$((e - s)) 'BEGIN {printf "%.2f", ns / 1e9}'
}

# measure HOST-PID: the processes this run added, by pid, and their memory;
# writes what the check needs after the end to $tmp/added.
measure() {
  python3 - "$1" "$backend" "$n" "$tmp/added" <<'EOF'
import json, os, subprocess, sys
host, backend, n, out = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]

def children():
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(p))
            except (OSError, IndexError, ValueError):
                pass
    return kids

def tree(root, kids):
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out

def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

def cmd(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")

kids = children()
pids = tree(host, kids)
containers = []
if backend == "docker":
    ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=io.triage-sandbox.parent-pid={host}"],
                         capture_output=True, text=True, check=True).stdout.split()
    containers = ids
    for c in ids:
        pid = int(subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", c], capture_output=True, text=True, check=True).stdout)
        if pid > 0:
            pids += tree(pid, kids)
owned = []
for parent in ("/run/triage-sandbox/oci/bundles", "/run/triage-sandbox/local"):
    try:
        names = os.listdir(parent)
    except OSError:
        continue
    for d in names:
        try:
            with open(os.path.join(parent, d, "owner.json")) as f:
                rec = json.load(f)
        except (OSError, ValueError):
            continue
        if rec.get("pid") == host:
            owned.append({"dir": os.path.join(parent, d), "cgroups": rec.get("cgroups") or []})

groups = {}
for p in pids:
    try:
        c = cmd(p)
        if "containerd-shim" in c or c.startswith("dockerd") or "/containerd " in c:
            continue  # the runtime's, not ours
        kind = ("keeper host" if p == host else "watcher" if " __watch " in c
                else "runc run" if c.split(" ")[0].endswith(("runc", "crun", "runsc")) else "holder")
        g = groups.setdefault(kind, {"pids": [], "rss": 0, "pss": 0})
        g["pids"].append(p)
        g["rss"] += status(p, "VmRSS")
        g["pss"] += pss(p)
    except OSError:
        pass
total = sum(g["rss"] for g in groups.values())
total_pss = sum(g["pss"] for g in groups.values())
for kind in ("keeper host", "watcher", "runc run", "holder"):
    g = groups.get(kind)
    if g:
        print(f"  {kind:12} {len(g['pids']):5} processes  RSS {g['rss']/1024:9.1f} MiB  {g['rss']/1024/n:6.2f} MiB/session  (PSS {g['pss']/1024/n:6.2f})")
print(f"  {'all we add':12} {sum(len(g['pids']) for g in groups.values()):5} processes  RSS {total/1024:9.1f} MiB  {total/1024/n:6.2f} MiB/session  (PSS {total_pss/1024/n:6.2f}); {total/1024/n/8:.2f}x the 8 MiB target")
# Idle CPU: what the idle sessions cost the host's processors while
# nobody uses them (the holders' polls, the keepers' timers), over a while.
def ticks(pids):
    t = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            t += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return t
import time
idle_secs = float(os.environ.get("IDLE_SECS", "10"))
everyone = [p for g in groups.values() for p in g["pids"]]
t0, h0 = ticks(everyone), ticks([host])
time.sleep(idle_secs)
t1, h1 = ticks(everyone), ticks([host])
hz = os.sysconf("SC_CLK_TCK")
print(f"  idle CPU over {idle_secs:.0f} s: {(t1-t0)*1000/hz/idle_secs/n:.3f} ms a second per session "
      f"(the keeper host {(h1-h0)*1000/hz/idle_secs:.1f} ms a second); {n} idle sessions keep "
      f"{(t1-t0)/hz/idle_secs*100:.1f}% of one processor busy")
fds = len(os.listdir(f"/proc/{host}/fd"))
threads = status(host, "Threads")
import resource
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
try:
    with open(f"/proc/{host}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                hard = int(line.split()[4]) if line.split()[4].isdigit() else hard
except OSError:
    pass
with open("/proc/sys/kernel/pid_max") as f:
    pid_max = int(f.read())
avail = 0
with open("/proc/meminfo") as f:
    for line in f:
        if line.startswith("MemAvailable:"):
            avail = int(line.split()[1])
tasks = sum(status(p, "Threads") for g in groups.values() for p in g["pids"])
print(f"  limits: the host holds {fds} descriptors ({fds/n:.1f}/session; its limit {hard}: N <= {int(hard/(fds/n))}), "
      f"{threads} threads; all we add {tasks} tasks ({tasks/n:.1f}/session; pid_max {pid_max}: N <= {int(pid_max/(tasks/n))}); "
      f"MemAvailable {avail/1024:.0f} MiB: N <= {int(avail/(total/n))} more")
with open(out, "w") as f:
    json.dump({"pids": {str(p): cmd(p) for g in groups.values() for p in g["pids"]}, "containers": containers, "owned": owned}, f)
EOF
}

# left HOST-PID: what of this run outlived its end, one line each.
left() {
  python3 - "$1" "$backend" "$tmp" <<'EOF'
import glob, json, os, subprocess, sys
host, backend, tmp = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(f"{tmp}/added") as f:
    added = json.load(f)
left = []
for pid, c in added["pids"].items():
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if f.read().replace(b"\0", b" ").decode(errors="replace") == c:
                left.append(f"process {pid}: {c[:100]}")
    except OSError:
        pass
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                c = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if c.startswith(tmp + "/bin/") and p not in added["pids"]:
            left.append(f"process {p}: {c[:100]}")
if backend == "docker":
    ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=io.triage-sandbox.parent-pid={host}"],
                         capture_output=True, text=True, check=True).stdout.split()
    left += [f"container {c}" for c in ids]
mounts = open("/proc/self/mountinfo").read()
for o in added["owned"]:
    if os.path.lexists(o["dir"]):
        left.append(f"state {o['dir']}")
    if f" {o['dir']}/" in mounts:
        left.append(f"mount under {o['dir']}")
    left += [f"cgroup {c}" for c in o["cgroups"] if os.path.lexists(c)]
    name = os.path.basename(o["dir"])
    if backend == "oci" and os.path.lexists(f"/run/triage-sandbox/oci/runtime/{name}"):
        left.append(f"runc state {name}")
for pat in ("*.sock", "*.json", "host-*.rec"):
    left += [f"file {p}" for p in glob.glob(f"{tmp}/w/{pat}")]
base = os.environ.get("TMPDIR") or "/tmp"
if os.geteuid() != 0 and os.path.isabs(os.environ.get("XDG_RUNTIME_DIR", "")):
    base = os.environ["XDG_RUNTIME_DIR"]
left += [f"proxy directory {d}" for d in glob.glob(f"{base}/triage-sandbox-egress-{host}-*")]
print("\n".join(left))
EOF
}

# check WHAT HOST-PID: nothing of this run is left after WHAT, waiting a
# little for lifelines and removals under way.
check() {
  local rest
  for _ in $(seq 1 60); do
    rest=$(left "$2")
    [ -z "$rest" ] && { echo "  nothing left after $1"; return 0; }
    sleep 1
  done
  echo "bench-sessions: left behind after $1:" >&2
  echo "$rest" | head -20 >&2
  exit 1
}

round() {
  local how=$1 secs host
  secs=$(start_all "$how")
  host=$(hosts)
  case $host in ''|*' '*) echo "bench-sessions: want one keeper host, found pids: '$host'" >&2; exit 1 ;; esac
  echo "$backend, $n idle sessions ($how): started in ${secs}s, $(awk -v s="$secs" -v n="$n" 'BEGIN {printf "%.0f", s * 1000 / n}') ms/session; keeper host pid $host"
  measure "$host"
  case $how in
  end)
    (cd "$ws" && "$bin" session end --all >/dev/null 2>&1) || { echo "bench-sessions: session end --all failed" >&2; exit 1; }
    check "session end --all" "$host"
    ;;
  kill)
    kill -9 "$host"
    # The lifelines end the sandboxes' processes; gc sweeps what the dead
    # host left once they are gone.
    for _ in $(seq 1 30); do left "$host" | grep '^process' >/dev/null || break; sleep 1; done # grep -q would end the listing's pipe early
    "$bin" gc >/dev/null 2>&1 || { echo "bench-sessions: gc failed" >&2; exit 1; }
    check "kill -9 of the keeper host, then gc" "$host"
    ;;
  esac
}

round end
round kill

#!/usr/bin/env bash
# Where a cold `run --backend oci -- true` spends its time, process by
# process: N runs (default 10) under perf, with the kernel's exec and exit
# events and uprobes on the inside binary's holder functions; prints each
# step's median time from the holder's exec (negative: before it) and the
# same for a bare `runc run` of a bundle with `true` as its process is
# what scripts/bench-cold.sh pairs against. A diagnostic, not a figure:
# perf's probes cost a few microseconds each.
#   front     the front's exec (bin/triage-sandbox)
#   cli       the CLI's exec (the front's hand-over)
#   runc      `runc run`'s exec
#   holder    the holder's exec in the container (the inside binary)
#   main      its main.main (Go's runtime start and package init done)
#   runhold   RunHold's entry (its spec read), then the holder is armed
#   hold      Hold's entry (armed: the reserve of threads and the refusal
#             of signals made)
#   control   startControl (the warden started; ready follows at once)
#   resident  the resident supervisor's run (the host's exec request in)
#   true      the command's exec
#   end       the command's exit, the holder's, runc's, the CLI's
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
[ "$(id -u)" = 0 ] || { echo "trace-cold: perf's probes and the oci backend need root" >&2; exit 2; }
command -v perf >/dev/null || { echo "trace-cold: perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
inside=$(pwd)/bin/triage-sandbox-inside
[ -x "$inside" ] || { echo "trace-cold: $inside is missing: run scripts/setup.sh" >&2; exit 2; }
tmp=$(mktemp -d)
group=tscold$$
cleanup() { perf probe -q -d "$group:*" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
chmod 755 "$tmp"
pkg=github.com/triage-sandbox/triage-sandbox/inside/sandboxinit
for p in "main=main.main" "runhold=$pkg.RunHold" "hold=$pkg.Hold" "control=$pkg.startControl" "resident=$pkg.(*resident).run"; do
  perf probe -q -x "$inside" --add "$group:$p" >/dev/null 2>&1 ||
    { echo "trace-cold: cannot probe ${p#*=} in $inside (built without symbols?)" >&2; exit 2; }
done
bin=$(pwd)/bin/triage-sandbox
# The first run unpacks the image root when it is missing: untimed.
(cd "$tmp" && "$bin" run --backend oci -- true >/dev/null 2>&1) ||
  { echo "trace-cold: the oci backend cannot run here" >&2; exit 2; }
perf record -q -a -e "$group:*" -e sched:sched_process_exec -e sched:sched_process_exit -o "$tmp/perf.data" -- \
  bash -c "cd '$tmp' && for i in \$(seq $n); do '$bin' run --backend oci -- true >/dev/null 2>&1 || exit 1; done" >/dev/null 2>&1 ||
  { echo "trace-cold: a run failed under perf" >&2; exit 1; }
perf script -i "$tmp/perf.data" -F comm,pid,time,event,trace 2>/dev/null >"$tmp/events"
python3 - "$tmp/events" "$bin" "$group" <<'PY'
import re, statistics, sys
path, front, group = sys.argv[1], sys.argv[2], sys.argv[3]
runs, cur = [], None
for line in open(path):
    m = re.match(r"\s*(.+?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
    if not m:
        continue
    comm, pid, t, ev, tr = m.groups()
    t = float(t) * 1000
    if ev == "sched:sched_process_exec" and tr.startswith("filename=" + front + " "):
        cur = {"front": t, "front_pid": pid}
        runs.append(cur)
        continue
    if cur is None:
        continue
    key = None
    if ev == "sched:sched_process_exec":
        for k, pat in (("cli", "-cli "), ("runc", "/runc "), ("holder", "/.triage-sandbox/"), ("true", "/true ")):
            if pat in tr + " " and k not in cur:
                key = k
    elif ev.startswith(group + ":"):
        key = ev.split(":", 1)[1]
    elif ev == "sched:sched_process_exit" and "group_dead=true" in tr:
        # In their order only: the CLI's and the front's short-lived
        # children share those names.
        c = re.search(r"comm=(\S+)", tr).group(1)
        for k, name, after in (("true exit", "true", "true"), ("holder exit", "triage-sandbox", "true exit"),
                               ("runc exit", "runc", "holder exit"), ("cli exit", "triage-sandbox-", "runc exit")):
            if c == name and after in cur:
                key = k
    if key and key not in cur:
        cur[key] = t
order = ["front", "cli", "runc", "holder", "main", "runhold", "hold", "control", "resident", "true", "true exit", "holder exit", "runc exit", "cli exit"]
done = [r for r in runs[1:] if all(k in r for k in order)]
if not done:
    sys.exit("trace-cold: no run had every step (the probes or the binary's names changed?)")
print("cold run on oci, %d runs: median ms from the holder's exec" % len(done))
for k in order:
    print("  %-12s %8.2f" % (k, statistics.median(r[k] - r["holder"] for r in done)))
PY

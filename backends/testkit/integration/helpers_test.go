//go:build linux

package integration_test

import (
	"strconv"
	"strings"
	"testing"
)

// reachHelpers is the command of TestHelpersOutOfTheCommandsReach: it opens
// every descriptor of its parent (the supervisor) and of pid 1 (the
// holder) through /proc, and, as the control, those of a child of its own.
const reachHelpers = `
import os, subprocess, sys
def opened(pid):
    d = "/proc/%d/fd" % pid
    try:
        names = sorted(os.listdir(d))
    except OSError as e:
        return [], "list: " + e.strerror
    got, errs = [], set()
    for n in names:
        try:
            fd = os.open(d + "/" + n, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError as e:
            errs.add(e.strerror)
            continue
        os.close(fd)
        got.append(n)
    return got, ",".join(sorted(errs))
child = subprocess.Popen(["sleep", "30"], stdin=subprocess.PIPE)
for name, pid in (("parent", os.getppid()), ("pid1", 1), ("child", child.pid)):
    got, errs = opened(pid)
    print("%s opened=%s refused=%s" % (name, ",".join(got) or "-", errs or "-"))
child.kill()
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    if k in ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        print("%s %s" % (k, " ".join(v.split())))
`

// TestHelpersOutOfTheCommandsReach: a command cannot open the descriptors
// of the sandbox's own helpers (the supervisor, the holder) through
// /proc/PID/fd, on every backend and under gVisor; it can open its own
// child's (the control). It runs as the sandbox identity with no
// capability in any set, though under gVisor its supervisor started as
// root to take that identity. Under gVisor releases before 2025-12 /proc/PID/fd
// ignores dumpability: only the descriptor's own owner and mode guard it.
func TestHelpersOutOfTheCommandsReach(t *testing.T) {
	for _, name := range append(backendNames, gvisor, dockerGVisor) {
		t.Run(name, func(t *testing.T) {
			k := newKit(t, name)
			f := newFixture(t)
			p := k.build(t, f, "reproducer", currentHost(t))
			out := k.run(t, p, 0, "python3", "-c", reachHelpers)
			if out.res.ExitCode != 0 {
				t.Fatalf("exit %d: %s%s", out.res.ExitCode, out.stdout, out.stderr)
			}
			seen := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
				who, rest, _ := strings.Cut(line, " ")
				seen[who] = rest
			}
			if !strings.HasPrefix(seen["child"], "opened=0") {
				t.Fatalf("the control could not open its own child's descriptors: %q", out.stdout)
			}
			for _, who := range []string{"parent", "pid1"} {
				if !strings.HasPrefix(seen[who], "opened=-") {
					t.Errorf("the command opened its %s's descriptors: %s", who, seen[who])
				}
			}
			ids := strconv.Itoa(p.User.UID)
			if want := strings.Repeat(ids+" ", 3) + ids; seen["Uid"] != want {
				t.Errorf("the command's uids are %q, want %q", seen["Uid"], want)
			}
			for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if v, ok := seen[c]; ok && v != "0000000000000000" {
					t.Errorf("the command holds %s %s", c, v)
				}
			}
		})
	}
}

//go:build linux

package integration_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// uniqueName is a file name no other test or run uses, so what the test
// finds on the host under it is its own.
func uniqueName(t *testing.T, prefix string) string {
	t.Helper()
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(r[:])
}

func TestReproducerWritesOnlyItsPaths(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "reproducer", currentHost(t))
		// System paths get names of this test's own: the local backend's
		// root is the host's, and what a failure left there must be told
		// apart from anything else and removed.
		etcEvil, usrEvil := "/etc/"+uniqueName(t, "evil"), "/usr/"+uniqueName(t, "evil")
		t.Cleanup(func() {
			for _, p := range []string{etcEvil, usrEvil} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s exists on the host; removing it", p)
					_ = os.Remove(p)
				}
			}
		})
		script := `
echo repro > repros/x && echo "repros ok"
echo x > triage.toml.new 2>/dev/null && echo "root WRITABLE"
echo x > ` + f.checkout + `/evil && echo "checkout writes discarded"
echo x > ` + etcEvil + ` 2>/dev/null && echo "etc WRITABLE"
echo x > ` + usrEvil + ` 2>/dev/null && echo "usr WRITABLE"
echo x > "$HOME/scratch" && echo "home scratch ok"
echo x > "$TMPDIR/scratch" && echo "tmp scratch ok"
exit 0`
		out := k.run(t, p, 0, "sh", "-c", script)
		if out.res.ExitCode != 0 {
			t.Fatalf("exit %d: %s %s", out.res.ExitCode, out.stdout, out.stderr)
		}
		// The checkout is writable inside (checkout_writes = "discard", the
		// default), its writes never reach the host (below).
		for _, want := range []string{"repros ok", "home scratch ok", "tmp scratch ok", "checkout writes discarded"} {
			if !strings.Contains(out.stdout, want) {
				t.Errorf("missing %q in %q", want, out.stdout)
			}
		}
		if strings.Contains(out.stdout, "WRITABLE") {
			t.Errorf("wrote outside the writable paths: %q", out.stdout)
		}
		for _, p := range []string{filepath.Join(f.root, "triage.toml.new"), filepath.Join(f.checkout, "evil")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists on the host", p)
			}
		}
		// The file is on the host, owned by the sandbox identity, and usable by
		// the invoking user: read it, append to it, remove it.
		x := filepath.Join(f.root, "repros", "x")
		fi, err := os.Stat(x)
		if err != nil {
			t.Fatal(err)
		}
		if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != p.User.UID {
			t.Errorf("repros/x owned by %d, want %d", uid, p.User.UID)
		}
		fh, err := os.OpenFile(x, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatalf("invoking user cannot open repros/x: %v", err)
		}
		_, _ = fh.WriteString("more\n")
		fh.Close()
		if err := os.Remove(x); err != nil {
			t.Fatalf("invoking user cannot remove repros/x: %v", err)
		}
	})
}

func TestCanaryEnvironmentNotVisible(t *testing.T) {
	canaries := []string{
		"GITHUB_TOKEN=canary-gh-5f1e", "ANTHROPIC_API_KEY=canary-ant-77aa",
		"TRIAGE_GITHUB_TOKEN=canary-triage-9c2d", "AWS_SECRET_ACCESS_KEY=canary-aws-0b3f",
	}
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		for _, role := range profiles.Roles() {
			t.Run(string(role), func(t *testing.T) {
				p := k.build(t, f, role, currentHost(t, append([]string{"TRIAGE_ISSUE=42"}, canaries...)...))
				out := k.run(t, p, 0, "sh", "-c", "env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'")
				if strings.Contains(out.stdout, "canary") {
					t.Errorf("canary visible:\n%s", out.stdout)
				}
				if role == "reproducer" && !strings.Contains(out.stdout, "TRIAGE_ISSUE=42") {
					t.Errorf("allowed TRIAGE_ISSUE missing (the check could not fail otherwise):\n%s", out.stdout)
				}
			})
		}
	})
}

func TestOnlyLoopbackNoCapsNonRoot(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		for _, role := range profiles.Roles() {
			t.Run(string(role), func(t *testing.T) {
				p := k.build(t, f, role, currentHost(t))
				out := k.run(t, p, 0, "sh", "-c", "ls /sys/class/net; grep -E '^(Uid|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status")
				if out.res.ExitCode != 0 {
					t.Fatalf("exit %d: %s", out.res.ExitCode, out.stderr)
				}
				fields := map[string]string{}
				var ifaces []string
				for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
					k, v, ok := strings.Cut(line, ":")
					if !ok {
						ifaces = append(ifaces, line)
						continue
					}
					fields[k] = strings.TrimSpace(v)
				}
				if strings.Join(ifaces, ",") != "lo" {
					t.Errorf("interfaces = %v, want only lo", ifaces)
				}
				if uid := strings.Fields(fields["Uid"]); len(uid) == 0 || uid[0] == "0" {
					t.Errorf("uid = %q", fields["Uid"])
				}
				for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
					if fields[c] != "0000000000000000" {
						t.Errorf("%s = %q, want none", c, fields[c])
					}
				}
				if fields["NoNewPrivs"] != "1" || fields["Seccomp"] != "2" {
					t.Errorf("NoNewPrivs=%q Seccomp=%q", fields["NoNewPrivs"], fields["Seccomp"])
				}
			})
		}
	})
}

func TestPythonOneLiner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "reproducer", currentHost(t))
		out := k.run(t, p, 0, "python3", "-c", "import sys; print(sum(range(10)), sys.version_info[0])")
		if out.res.ExitCode != 0 || strings.TrimSpace(out.stdout) != "45 3" {
			t.Fatalf("exit %d out %q err %q", out.res.ExitCode, out.stdout, out.stderr)
		}
	})
}

// stopBound is how long after its deadline a timed-out command may still
// take to be stopped, its sandbox removed included. It is generous (the
// machine is shared and busy); the commands it guards would otherwise run
// for minutes.
const stopBound = 60 * time.Second

func TestExitCodes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		tests := []struct {
			name     string
			argv     []string
			timeout  time.Duration
			wantCode int
			timedOut bool
		}{
			{"own code", []string{"sh", "-c", "exit 3"}, 0, 3, false},
			{"not found", []string{"no-such-command"}, 0, 127, false},
			{"not executable", []string{f.checkout + "/setup.py"}, 0, 126, false},
			{"signal", []string{"sh", "-c", "kill -TERM $$"}, 0, 143, false},
			{"timeout kills the tree", []string{"sh", "-c", "sleep 300 & setsid sh -c 'trap \"\" TERM; sleep 300' & wait"}, 2 * time.Second, 124, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out := k.run(t, p, tt.timeout, tt.argv...)
				if got := sandbox.ExitCode(out.res); got != tt.wantCode {
					t.Errorf("exit = %d, want %d (stderr %q)", got, tt.wantCode, out.stderr)
				}
				if out.res.TimedOut != tt.timedOut {
					t.Errorf("timed out = %v", out.res.TimedOut)
				}
				// From the command's start: the sandbox's own start is not
				// the timeout's business.
				if tt.timedOut && time.Since(out.started) > tt.timeout+stopBound {
					t.Errorf("took %s to stop after a %s timeout", time.Since(out.started), tt.timeout)
				}
			})
		}
	})
}

// TestOutOfMemoryToldApart: a command past the memory limit ends as 137
// and is reported as OOM-killed; a plain SIGKILL is not. Under gVisor the
// limit takes the whole sandbox (its kernel is charged for the memory),
// which is reported as such, not as an unknown end.
func TestOutOfMemoryToldApart(t *testing.T) {
	for _, name := range append(backendNames, gvisor, dockerGVisor) {
		t.Run(name, func(t *testing.T) {
			k := newKit(t, name)
			if name == local.Name && os.Geteuid() != 0 {
				t.Skip("the local backend has no cgroup (and no OOM count) unless root")
			}
			f := newFixture(t)
			p := k.build(t, f, "agent", currentHost(t))
			p.Limits.Memory = 256 << 20
			bomb := k.run(t, p, time.Minute, "python3", "-c", "x = []\nwhile True: x.append(bytearray(64 << 20))")
			if bomb.res.ExitCode != 137 || !bomb.res.OOMKilled {
				t.Errorf("memory bomb: exit %d oom %v, want 137 and oom (stderr %q)", bomb.res.ExitCode, bomb.res.OOMKilled, bomb.stderr)
			}
			if (name == gvisor || name == dockerGVisor) && !bomb.res.WholeSandboxOOM {
				t.Errorf("gVisor: the whole sandbox's end is not reported as such")
			}
			kill := k.run(t, p, time.Minute, "sh", "-c", "kill -KILL $$")
			if kill.res.ExitCode != 137 || kill.res.OOMKilled {
				t.Errorf("SIGKILL: exit %d oom %v, want 137 without oom", kill.res.ExitCode, kill.res.OOMKilled)
			}
		})
	}
}

// TestCommandIsTheOOMKillersFirstChoice: the command's processes are the
// OOM killer's first choice, never what runs them (its supervisor, the
// holder). The command starts with the highest score and its parent has a
// lower one; a command of many processes, each smaller than the holder,
// that fills the memory limit loses some of them and ends with its own
// result. Before, on local (where Landlock keeps /proc read-only, so a
// forked command's score could not be raised), the holder was the largest
// process left and went first: "the sandbox ran out of memory and its
// holder was killed (exit 137); the result is unknown".
func TestCommandIsTheOOMKillersFirstChoice(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		if k.name == local.Name && os.Geteuid() != 0 {
			t.Skip("the local backend has no cgroup (and no memory limit) unless root")
		}
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		p.Limits.Memory = 128 << 20
		out, shown := k.runOutcome(t, p, "sh", "-c", `echo "scores $(cat /proc/self/oom_score_adj) $(cat /proc/$PPID/oom_score_adj)"`)
		var command, parent int
		if _, err := fmt.Sscanf(shown[strings.Index(shown, "scores"):], "scores %d %d", &command, &parent); err != nil || out.ExitCode != 0 {
			t.Fatalf("exit %d, %q: %v", out.ExitCode, shown, err)
		}
		if command != 1000 || parent >= command {
			t.Errorf("the command's oom_score_adj is %d and its parent's %d: want 1000 and lower", command, parent)
		}
		// 45 idle shells holding 3 MB each (about 4.5 MiB resident, less
		// than the holder) against 128 MiB.
		out, shown = k.runOutcome(t, p, "sh", "-c",
			`for i in $(seq 45); do sh -c 'x=$(head -c 3000000 /dev/zero | tr "\0" a); sleep 30' & done; sleep 3; echo alive`)
		if out.ExitCode != 0 || !strings.Contains(shown, "alive") {
			t.Errorf("many small processes at the memory limit: exit %d, %q; want the command's own end (0, alive)", out.ExitCode, shown)
		}
	})
}

// TestTimeoutToGone measures how long after the deadline the sandbox is
// gone, for a command that obeys SIGTERM and one that ignores it.
func TestTimeoutToGone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "agent", currentHost(t))
		for _, tt := range []struct{ name, script string }{
			{"obeys SIGTERM", "sleep 60"},
			{"ignores SIGTERM", "trap '' TERM; sleep 60 & setsid sleep 61 & wait"},
		} {
			start := time.Now()
			out := k.run(t, p, time.Second, "sh", "-c", tt.script) // returns once the sandbox is gone
			if !out.res.TimedOut {
				t.Fatalf("%s: not timed out", tt.name)
			}
			// Duration runs from the command's start, so Duration - timeout is
			// the deadline-to-dead time; removal follows before run returns.
			killed := out.res.Duration - time.Second
			t.Logf("%s: dead %v after the deadline; whole run incl. create/start/remove %v",
				tt.name, killed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			// The grace (p.Lifetime.KillGrace) then SIGKILL: well before the
			// 60 s the commands would live, with room for a busy machine.
			if bound := p.Lifetime.KillGrace + 20*time.Second; killed > bound {
				t.Errorf("%s: %v from deadline to dead (bound %v)", tt.name, killed, bound)
			}
		}
	})
}

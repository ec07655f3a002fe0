package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// TestSessionsShareOneKeeperHost (issue 40): the sessions of one user,
// binary and environment are kept by one keeper host process; one session
// ends while another runs a command, which finishes; `session end --all`
// leaves nothing (the host ends after its grace); a kill -9 of the host
// takes every session's sandbox with it, `gc` removes what it left, and a
// session then starts afresh.
func TestSessionsShareOneKeeperHost(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	testenv.RequireRoot(t, "the oci and local backends' state lives under /run as root")
	for _, backend := range []string{"local", "oci"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "oci" {
				testenv.RequireDocker(t) // the image comes from the daemon
				if _, err := exec.LookPath("runc"); err != nil {
					t.Skip("oci: runc is not installed")
				}
			}
			root := workspace(t, "")
			dir, err := os.MkdirTemp("", "tsw") // short: a socket path is at most 108 bytes
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			env := []string{warm.DirEnv + "=" + dir}
			t.Cleanup(func() { runCLI(t, root, env, "session", "end", "--all") })
			start := func(names ...string) (host int) {
				t.Helper()
				for _, name := range names {
					if r := runCLI(t, root, env, "run", "--backend", backend, "--session", name, "--", "true"); r.code != 0 {
						t.Fatalf("starting session %s: exit %d: %s", name, r.code, r.stderr)
					}
				}
				recs, err := warm.List(dir)
				if err != nil || len(recs) != len(names) {
					t.Fatalf("want %d keepers' records, got %+v %v", len(names), recs, err)
				}
				for _, r := range recs {
					if r.PID != recs[0].PID || r.Host == "" {
						t.Fatalf("the sessions are not kept by one host: %+v", recs)
					}
				}
				cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(recs[0].PID), "cmdline"))
				if !strings.Contains(string(cmdline), "__warm") || !strings.Contains(string(cmdline), dir) {
					t.Fatalf("pid %d is not this test's keeper host: %q", recs[0].PID, cmdline)
				}
				return recs[0].PID
			}
			nothingLeft := func(what string, host int, dirs, cgroups []string) {
				t.Helper()
				var left []string
				if !testenv.Eventually(30*time.Second, func() bool {
					left = leftOf(dirs, cgroups)
					if syscall.Kill(host, 0) == nil {
						left = append(left, "the keeper host "+strconv.Itoa(host))
					}
					for _, pat := range []string{"*.sock", "*.json", "host-*.rec"} {
						files, _ := filepath.Glob(filepath.Join(dir, pat))
						left = append(left, files...)
					}
					return len(left) == 0
				}) {
					t.Fatalf("left behind after %s: %v", what, left)
				}
			}

			host := start("one", "two")
			dirs, cgroups := ownedDirs(t, host)
			if len(dirs) != 2 {
				t.Fatalf("want the two sessions' state directories owned by the host %d, got %v", host, dirs)
			}
			// One session ends while the other runs a command.
			cmd := exec.Command(testenv.Binary(t), "run", "--backend", backend, "--session", "one", "--", "sh", "-c", "sleep 2; echo still-here")
			cmd.Dir = root
			cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+stateDir(t)), env...)
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
			if r := runCLI(t, root, env, "session", "end", "two"); r.code != 0 {
				t.Fatalf("session end two: exit %d: %s", r.code, r.stderr)
			}
			if err := cmd.Wait(); err != nil || strings.TrimSpace(out.String()) != "still-here" {
				t.Fatalf("session one's command while two ended: %q %v", out.String(), err)
			}
			if recs, _ := warm.List(dir); len(recs) != 1 || recs[0].Name != "one" || !recs[0].Alive() {
				t.Fatalf("after session two ended: %+v", recs)
			}
			if r := runCLI(t, root, env, "session", "end", "--all"); r.code != 0 || !strings.Contains(r.stderr, "session one ended") {
				t.Fatalf("session end --all: exit %d: %s", r.code, r.stderr)
			}
			nothingLeft("session end --all", host, dirs, cgroups)

			host = start("three", "four")
			dirs, cgroups = ownedDirs(t, host)
			if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// The sandboxes' lifeline is the host: their processes end;
			// gc sweeps their state, records and the host's files.
			if !testenv.Eventually(30*time.Second, func() bool { return syscall.Kill(host, 0) != nil }) {
				t.Fatal("the keeper host outlived kill -9")
			}
			if !testenv.Eventually(30*time.Second, func() bool {
				if r := runCLI(t, root, env, "gc"); r.code != 0 {
					t.Fatalf("gc: exit %d: %s", r.code, r.stderr)
				}
				return len(leftOf(dirs, cgroups)) == 0
			}) {
				t.Fatalf("left behind after kill -9 of the keeper host and gc: %v", leftOf(dirs, cgroups))
			}
			nothingLeft("kill -9 of the keeper host and gc", host, dirs, cgroups)
			if r := runCLI(t, root, env, "run", "--backend", backend, "--session", "three", "--", "echo", "afresh"); r.code != 0 || strings.TrimSpace(r.stdout) != "afresh" {
				t.Fatalf("the session after its host was killed: exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

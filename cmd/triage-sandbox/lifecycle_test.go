package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/runproxy"
	"github.com/triage-sandbox/triage-sandbox/selftest"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// containersOf lists containers (running or not) whose parent-pid label is pid.
func containersOf(t *testing.T, cli *client.Client, pid int) []string {
	t.Helper()
	res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", profiles.LabelParentPID+"="+strconv.Itoa(pid)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// processesWith lists host pids (but except and its children) whose argv
// holds token; the host sees the container's processes too. A child of
// except caught between its fork and its exec shows except's own argv
// (Go forks with CLONE_VM): under load the runs' early spawns (the
// watcher, the runtime) were taken for the command, and the CLI killed
// before its command started. The command never is except's child: it
// runs in the sandbox, under the holder.
func processesWith(token string, except int) []int {
	var out []int
	for _, pid := range selftest.Survivors(token) {
		if pid != except && parentOf(pid) != except {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf is pid's parent (0: unknown, e.g. it ended).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold any byte: fields count from its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	var state byte
	var ppid int
	if _, err := fmt.Sscanf(string(b[i+1:]), " %c %d", &state, &ppid); err != nil {
		return 0
	}
	return ppid
}

// TestInterruptAndKillLeaveNothing: Ctrl-C and kill -9 of triage-sandbox
// mid-run both leave no container and no process behind.
func TestInterruptAndKillLeaveNothing(t *testing.T) {
	testenv.RequireDocker(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	root := workspace(t, "")
	// Ctrl-C once, kill -9 ten times: each must leave nothing.
	sigs := []syscall.Signal{syscall.SIGINT}
	for i := 0; i < 10; i++ {
		sigs = append(sigs, syscall.SIGKILL)
	}
	var worst time.Duration
	defer func() {
		if t.Failed() {
			return
		}
		t.Logf("%d interrupted/killed runs: 0 containers and 0 processes left; slowest cleanup %v", len(sigs), worst)
	}()
	for i, sig := range sigs {
		t.Run(fmt.Sprintf("%v-%d", sig, i), func(t *testing.T) {
			token := "lifecycle-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			cmd := exec.Command(testenv.Binary(t), "run", "--", "sh", "-c",
				"sleep 300 & setsid sleep 301 & sleep 302; : "+token)
			cmd.Dir = root
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			if !testenv.Eventually(20*time.Second, func() bool { return len(processesWith(token, pid)) > 0 }) {
				_ = cmd.Process.Kill()
				t.Fatal("the command never started")
			}
			if len(containersOf(t, cli, pid)) != 1 {
				t.Fatalf("want one labelled container, got %v", containersOf(t, cli, pid))
			}
			_ = cmd.Process.Signal(sig)
			err := cmd.Wait()
			if sig == syscall.SIGINT {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
					t.Errorf("exit after Ctrl-C = %v, want 130", err)
				}
			}
			start := time.Now()
			// Bounded generously: the watcher is a process of its own, and
			// a CI machine may be saturated (the worst seen quiet is 0.6 s).
			if !testenv.Eventually(30*time.Second, func() bool {
				return len(containersOf(t, cli, pid)) == 0 && len(processesWith(token, pid)) == 0
			}) {
				t.Fatalf("left behind after %v: containers %v, processes %v", sig, containersOf(t, cli, pid), processesWith(token, pid))
			}
			worst = max(worst, time.Since(start).Round(time.Millisecond))
		})
	}
}

// ownedDirs are the state directories (bundles, local sandboxes) whose
// ownership record names pid, with the cgroups the record lists.
func ownedDirs(t *testing.T, pid int) (dirs, cgroups []string) {
	t.Helper()
	for _, parent := range []string{"/run/triage-sandbox/oci/bundles", "/run/triage-sandbox/local"} {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			dir := filepath.Join(parent, e.Name())
			raw, err := os.ReadFile(filepath.Join(dir, "owner.json"))
			if err != nil {
				continue
			}
			var rec struct {
				PID     int      `json:"pid"`
				Cgroups []string `json:"cgroups"`
			}
			if json.Unmarshal(raw, &rec) == nil && rec.PID == pid {
				dirs = append(dirs, dir)
				cgroups = append(cgroups, rec.Cgroups...)
			}
		}
	}
	return dirs, cgroups
}

// leftOf lists what of dirs and cgroups still exists: the directories,
// mounts below them (a network namespace's nsfs bind mount), the cgroups.
func leftOf(dirs, cgroups []string) []string {
	var left []string
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			left = append(left, d)
		}
		if strings.Contains(string(mounts), " "+d+"/") {
			left = append(left, "mount under "+d)
		}
	}
	for _, c := range cgroups {
		if _, err := os.Lstat(c); err == nil {
			left = append(left, c)
		}
	}
	return left
}

// TestKillLeavesNothingOnEveryBackend: after kill -9 of triage-sandbox
// mid-run on oci and local, the next start sweeps what the dead owner
// left: processes, bundles, mounts (network namespaces), cgroups and
// records; a one-shot run's start, or a session's, whose keeper sweeps
// beside the start of its sandbox (the session's commands sweep nothing).
// (Docker's container is removed by its lifeline; see above.)
func TestKillLeavesNothingOnEveryBackend(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	testenv.RequireRoot(t, "the oci and local backends' state lives under /run as root")
	root := workspace(t, "")
	for _, backend := range []string{"oci", "local"} {
		if backend == "oci" {
			if _, err := exec.LookPath("runc"); err != nil {
				t.Log("oci: runc is not installed")
				continue
			}
		}
		for _, next := range []string{"run", "session"} {
			t.Run(backend+"/"+next, func(t *testing.T) {
				token := "killed-" + strconv.FormatInt(time.Now().UnixNano(), 36)
				cmd := exec.Command(testenv.Binary(t), "run", "--backend", backend, "--", "sh", "-c",
					"sleep 300 & setsid sleep 301 & sleep 302; : "+token)
				cmd.Dir = root
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				pid := cmd.Process.Pid
				// A forked child shows its parent's argv until it execs: the
				// command runs once its sandbox's record exists too.
				var dirs, cgroups []string
				if !testenv.Eventually(60*time.Second, func() bool {
					dirs, cgroups = ownedDirs(t, pid)
					return len(processesWith(token, pid)) > 0 && len(dirs) > 0
				}) {
					_ = cmd.Process.Kill()
					t.Fatal("the command never started")
				}
				if len(dirs) != 1 {
					t.Fatalf("want one state directory owned by %d, got %v", pid, dirs)
				}
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				// The next start, of any command, sweeps.
				args := []string{"run", "--backend", backend, "--", "true"}
				if next == "session" {
					name := "sweep-" + strconv.FormatInt(time.Now().UnixNano(), 36)
					args = []string{"run", "--backend", backend, "--session", name, "--", "true"}
					defer func() {
						if r := runCLI(t, root, nil, "session", "end", name); r.code != 0 {
							t.Errorf("session end %s: exit %d: %s", name, r.code, r.stderr)
						}
					}()
				}
				if r := runCLI(t, root, nil, args...); r.code != 0 {
					t.Fatalf("the next run: exit %d: %s", r.code, r.stderr)
				}
				if !testenv.Eventually(20*time.Second, func() bool {
					return len(processesWith(token, pid)) == 0 && len(leftOf(dirs, cgroups)) == 0
				}) {
					t.Fatalf("left behind after kill -9 and the next run: processes %v, state %v",
						processesWith(token, pid), leftOf(dirs, cgroups))
				}
			})
		}
	}
}

// TestKillLeavesNoProxy (issue 36): a session's network proxy lives in
// its keeper, which holds the sandbox. A run killed with SIGKILL during a
// command ends that command's proxy (its socket goes; the keeper and its
// socket directory stay); the keeper killed with SIGKILL takes its proxy
// with it, and the next sweep (gc, or any start) removes the directory
// its name ties to the dead keeper; the session then starts afresh.
func TestKillLeavesNoProxy(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	for _, backend := range []string{"local", "oci", "docker"} {
		t.Run(backend, func(t *testing.T) {
			switch backend {
			case "docker":
				testenv.RequireDocker(t)
			case "oci":
				testenv.RequireDocker(t) // the image comes from the daemon
				testenv.RequireRoot(t, "the oci backend runs runc as root")
			}
			root := workspace(t, "[sandbox.agent]\nnetwork = [\"pkgs.example.org\"]\n")
			dir, err := os.MkdirTemp("", "tsw") // short: a socket path is at most 108 bytes
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			env := []string{warm.DirEnv + "=" + dir}
			name := "proxy-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			defer runCLI(t, root, env, "session", "end", name)
			token := "proxied-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			cmd := exec.Command(testenv.Binary(t), "run", "--backend", backend, "--session", name, "--", "sh", "-c", "sleep 300; : "+token)
			cmd.Dir = root
			cmd.Env = append(append(os.Environ(), "XDG_STATE_HOME="+stateDir(t)), env...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// A forked child shows its parent's argv until it execs: the
			// command runs once the keeper's record exists too.
			var recs []warm.Record
			if !testenv.Eventually(60*time.Second, func() bool {
				recs, _ = warm.List(dir)
				return len(processesWith(token, cmd.Process.Pid)) > 0 && len(recs) == 1
			}) {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("the session's command never started (keepers %+v)", recs)
			}
			keeper := recs[0].PID
			sockets := proxySockets(t, keeper)
			if len(sockets) != 1 || !isSocket(sockets[0]) {
				t.Fatalf("while its command runs the session's proxy serves on one socket: %v", sockets)
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if !testenv.Eventually(30*time.Second, func() bool {
				return !isSocket(sockets[0]) && len(processesWith(token, cmd.Process.Pid)) == 0
			}) {
				t.Fatalf("after kill -9 of the run: proxy socket served %v, processes %v", isSocket(sockets[0]), processesWith(token, cmd.Process.Pid))
			}
			if _, err := os.Stat(filepath.Dir(sockets[0])); err != nil {
				t.Fatalf("the live session's socket directory went: %v", err)
			}
			if err := syscall.Kill(keeper, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if !testenv.Eventually(30*time.Second, func() bool { return !recs[0].Alive() }) {
				t.Fatal("the keeper outlived kill -9")
			}
			if r := runCLI(t, root, env, "gc"); r.code != 0 {
				t.Fatalf("gc: exit %d: %s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Dir(sockets[0])); !os.IsNotExist(err) {
				t.Fatalf("the killed keeper's socket directory outlived gc: %v", err)
			}
			// A host not on the list: the proxy refuses it before any lookup.
			fetch := "import urllib.request\ntry:\n    urllib.request.urlopen('http://refused.invalid/', timeout=20)\nexcept Exception as e:\n    print(e)\n"
			if r := runCLI(t, root, env, "run", "--backend", backend, "--session", name, "--json", "--", "python3", "-c", fetch); r.code != 0 || !strings.Contains(r.stdout, `"network":[{"host":"refused.invalid"`) {
				t.Fatalf("the session after its keeper was killed: exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// proxySockets are the proxy sockets in the socket directories of process
// pid (runproxy names a directory after its owner).
func proxySockets(t *testing.T, pid int) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(runproxy.Base(), fmt.Sprintf("%s%d-*", runproxy.Prefix, pid)))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Join(d, filepath.Base(egress.SocketInSandbox))
	}
	return dirs
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

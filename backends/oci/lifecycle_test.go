package oci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/backends/oci/rootfs"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/inside/supervise"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// newBackend is the oci backend as the CLI makes it; it skips (or, with
// TRIAGE_SANDBOX_REQUIRE_DOCKER, fails) where it cannot run.
func newBackend(t *testing.T) *oci.Backend {
	t.Helper()
	testenv.RequireDocker(t) // the image's root comes from the daemon's image
	testenv.RequireRoot(t, "the oci backend runs runc as root here")
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("no runc")
	}
	b, err := oci.New(backends.Env{SelfExe: testenv.Binary(t)}, &oci.CachedRoots{Cache: rootfs.Cache{Dir: rootfs.DefaultDir("/root", os.LookupEnv)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Available(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

func workspacePolicy(t *testing.T, role profiles.Role) (*policy.Policy, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"repros", "issues", ".triage"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("# notes\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "triage.toml"), []byte("[project]\n"), 0o644)
	cfg, err := config.Load(filepath.Join(dir, "triage.toml"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	h.Cwd = dir
	p, err := policy.Build(cfg, role, h, policy.Options{Backend: oci.Name, Capabilities: oci.Capabilities()})
	if err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// The lifecycle on runc: exit codes, the sandbox's own loopback, staged
// outputs and a rename edit, a timeout that kills the whole tree, and
// nothing left once closed (no container, no bundle).
func TestLifecycle(t *testing.T) {
	b := newBackend(t)
	p, dir := workspacePolicy(t, profiles.RoleAgent)
	sess, err := sandbox.Start(context.Background(), b, p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := sess.Sandbox().ID()
	exec1 := func(timeout time.Duration, script string) (sandbox.Outcome, string) {
		var out testenv.Buffer
		res, err := sess.Exec(context.Background(), sandbox.Request{Timeout: timeout, NoGate: true,
			Command: backends.Command{Argv: []string{"sh", "-c", script}}, Streams: backends.Streams{Stdout: &out, Stderr: &out}})
		if err != nil {
			t.Fatalf("%q: %v", script, err)
		}
		return res, out.String()
	}
	res, out := exec1(0, `id -u; python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); c=socket.create_connection(s.getsockname()); print('loopback ok')"; sed -i s/notes/NOTES/ NOTES.md; echo r > repros/r.txt; exit 7`)
	if res.ExitCode != 7 || !strings.Contains(out, "loopback ok") || !strings.Contains(out, "65534\n") && !strings.Contains(out, "1000\n") {
		t.Fatalf("exit %d, output %q", res.ExitCode, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "NOTES.md")); string(b) != "# NOTES\n" {
		t.Errorf("NOTES.md = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "repros", "r.txt")); string(b) != "r\n" {
		t.Errorf("repros/r.txt = %q", b)
	}
	start := time.Now()
	res, out = exec1(time.Second, `(trap '' TERM; while :; do :; done) & sleep 60`)
	if !res.TimedOut || res.ExitCode != 124 || time.Since(start) > 15*time.Second {
		t.Fatalf("timeout: %+v after %s, %q", res, time.Since(start), out)
	}
	// The session is still usable and the tree is gone: no live sh but the
	// one asking and its own children (its pipeline's forks are "sh" until
	// they exec; a zombie the holder has yet to reap is gone for every
	// purpose but its pid, as in the integration tests' liveProcesses).
	res, out = exec1(0, `me=$$; ps -eo stat=,pid=,ppid=,comm= | awk -v me="$me" '$1 !~ /^Z/ && $4 == "sh" && $2 != me && $3 != me' | wc -l`)
	if res.ExitCode != 0 || strings.TrimSpace(out) != "0" {
		t.Errorf("after the timeout: exit %d, sh processes %q", res.ExitCode, out)
	}
	if err := sess.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("runc", "--root", "/run/triage-sandbox/oci/runtime", "state", id).CombinedOutput(); err == nil {
		t.Errorf("container %s still exists: %s", id, out)
	}
	if _, err := os.Stat(filepath.Join("/run/triage-sandbox/oci/bundles", id)); !os.IsNotExist(err) {
		t.Errorf("bundle of %s still exists: %v", id, err)
	}
}

// kill -9 of triage-sandbox mid-run leaves nothing once swept: the holder's
// lifeline ends the container, and the sweep removes what the runtime
// kept.
func TestKillNineLeavesNothing(t *testing.T) {
	b := newBackend(t)
	_, dir := workspacePolicy(t, profiles.RoleReproducer)
	// The marker is this test's alone: other tests and users run sleeps too.
	marker := fmt.Sprintf("sleep 120 0.%d", time.Now().UnixNano()%1e9)
	cmd := exec.Command(testenv.Binary(t), "run", "--backend", "oci", "--role", "reproducer", "--", "sh", "-c", "echo started; exec "+marker)
	cmd.Dir = dir
	// Read while the command writes it: a buffer safe for that.
	var out testenv.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "started") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// Soon no process of that sandbox runs any more (generously bounded:
	// CI's machine is busy).
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n, _ := exec.Command("pgrep", "-f", marker).Output(); len(bytes.TrimSpace(n)) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, _ := exec.Command("pgrep", "-f", marker).Output(); len(bytes.TrimSpace(n)) != 0 {
		t.Errorf("the command outlived triage-sandbox (pid %d): %s", pid, n)
	}
	// A cold run is one-shot: its runtime ran in the foreground, and
	// deleted the container itself once the cut lifeline ended the holder,
	// before any sweep; no runtime process stays.
	ids := bundlesOf(t, pid)
	for _, bundle := range ids {
		id := filepath.Base(bundle)
		if !testenv.Eventually(10*time.Second, func() bool {
			return exec.Command("runc", "--root", "/run/triage-sandbox/oci/runtime", "state", id).Run() != nil && len(runtimeRunsOf(t, id)) == 0
		}) {
			t.Errorf("container %s of the killed run still kept by runc before the sweep (runtime processes %v)", id, runtimeRunsOf(t, id))
		}
	}
	if _, err := b.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir("/run/triage-sandbox/oci/bundles")
	for _, e := range entries {
		raw, _ := os.ReadFile(filepath.Join("/run/triage-sandbox/oci/bundles", e.Name(), "owner.json"))
		var rec struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(raw, &rec) == nil && rec.PID == pid {
			t.Errorf("bundle %s of the killed run survived the sweep", e.Name())
		}
	}
}

// Under gVisor with an allow-list (runsc connects host sockets), a socket
// under a mount is covered in a view of its mount made in the bundle
// (coverSockets). After kill -9 of triage-sandbox, removing the bundle as
// an older release did (its overlay set's RemoveAt, then everything)
// leaves the host's directory whole and nothing mounted; so does the
// sweep. An older sweep once deleted through a view into the host's files.
func TestKillNineLeavesNoCoveredView(t *testing.T) {
	testenv.RequireDocker(t)
	testenv.RequireRoot(t, "the oci backend runs runsc as root here")
	if _, err := exec.LookPath("runsc"); err != nil {
		t.Skip("runsc (gVisor) is not installed: TRIAGE_SANDBOX_GVISOR=1 scripts/setup.sh installs it")
	}
	dir, err := os.MkdirTemp("", "kv") // short: a socket's address holds 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(ro, "keep.txt")
	if err := os.WriteFile(keep, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(ro, "d.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	toml := "[sandbox]\nruntime = \"runsc\"\nread_only = [\"" + ro + "\"]\n[sandbox.reproducer]\nnetwork = [\"example.com\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "triage.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testenv.Binary(t), "run", "--backend", "oci", "--role", "reproducer", "--", "sh", "-c", "echo started; exec sleep 120")
	cmd.Dir = dir
	var out testenv.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testenv.Eventually(60*time.Second, func() bool { return strings.Contains(out.String(), "started") }) {
		_ = cmd.Process.Kill()
		t.Fatalf("the command never started: %s", out.String())
	}
	views := coverMounts(t)
	if len(views) == 0 {
		t.Errorf("no covered view of %s while the sandbox runs", ro)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// What an older release's sweep did to a dead owner's bundle.
	for _, bundle := range bundlesOf(t, pid) {
		if err := overlay.RemoveAt(filepath.Join(bundle, "overlays")); err != nil {
			t.Errorf("removing the overlays: %v", err)
		}
		_ = os.RemoveAll(bundle)
	}
	if got, err := os.ReadFile(keep); err != nil || string(got) != "host\n" {
		t.Errorf("the host's file after the bundle's removal: %q, %v", got, err)
	}
	if left := coverMounts(t); len(left) > 0 {
		t.Errorf("still mounted: %v", left)
	}
}

// coverMounts are the mounts of this namespace that hold covered views
// (a bundle's overlays/cover-*).
func coverMounts(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.Contains(f[4], "/overlays/cover-") {
			out = append(out, f[4])
		}
	}
	return out
}

// bundlesOf are the bundle directories whose owner record names pid.
func bundlesOf(t *testing.T, pid int) []string {
	t.Helper()
	entries, _ := os.ReadDir("/run/triage-sandbox/oci/bundles")
	var out []string
	for _, e := range entries {
		dir := filepath.Join("/run/triage-sandbox/oci/bundles", e.Name())
		raw, _ := os.ReadFile(filepath.Join(dir, "owner.json"))
		var rec struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(raw, &rec) == nil && rec.PID == pid {
			out = append(out, dir)
		}
	}
	if len(out) == 0 {
		t.Errorf("no bundle of %d", pid)
	}
	return out
}

// A one-shot sandbox (the cold `run`) keeps `runc run` in the foreground
// for its life, and that runtime deletes the container itself once the
// holder ends: Close needs no `runc delete`. A session's sandbox starts
// detached: no runtime stays resident beside it (an idle session's host
// memory). Both end with nothing left.
func TestOneShotRuntimeInForeground(t *testing.T) {
	b := newBackend(t)
	p, _ := workspacePolicy(t, profiles.RoleReproducer)
	for _, tc := range []struct {
		name     string
		opts     backends.StartOptions
		resident bool
	}{
		{"one-shot", backends.StartOptions{OneShot: true}, true},
		{"session", backends.StartOptions{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := b.Start(context.Background(), p, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			id := sb.ID()
			runs := runtimeRunsOf(t, id)
			// A detached `runc run` may still be finishing its own exit
			// when the holder says it is ready: wait for it, within a
			// bound (it must not stay resident).
			for deadline := time.Now().Add(2 * time.Second); !tc.resident && len(runs) > 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				runs = runtimeRunsOf(t, id)
			}
			if got := len(runs) > 0; got != tc.resident {
				t.Errorf("a `runc run` of %s resident: %v, want %v (%v)", id, got, tc.resident, runs)
			}
			if err := sb.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("runc", "--root", "/run/triage-sandbox/oci/runtime", "state", id).CombinedOutput(); err == nil {
				t.Errorf("container %s still exists: %s", id, out)
			}
			if left := runtimeRunsOf(t, id); len(left) > 0 {
				t.Errorf("runtime processes of %s left: %v", id, left)
			}
		})
	}
}

// runtimeRunsOf are the pids of runtime processes (runc run, runc init is
// not one) whose arguments name container id.
func runtimeRunsOf(t *testing.T, id string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) > 2 && filepath.Base(args[0]) == "runc" && slices.Contains(args, "run") && args[len(args)-1] == id {
			out = append(out, pid)
		}
	}
	return out
}

// A one-shot sandbox's holder ends once its command's result is in, before
// Close (Exec cuts the lifeline: the runtime's teardown overlaps the
// caller's audit write), with the command's own result; Close then finds
// the runtime gone and leaves nothing: no container, no network
// namespace's mount (released while the runtime ends), no bundle.
func TestOneShotEndsAfterItsCommand(t *testing.T) {
	b := newBackend(t)
	p, _ := workspacePolicy(t, profiles.RoleReproducer)
	sb, err := b.Start(context.Background(), p, backends.StartOptions{OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.ID()
	var out testenv.Buffer
	res, err := sb.Exec(context.Background(), backends.Command{Argv: []string{"sh", "-c", "echo one; exit 3"}},
		backends.Streams{Stdout: &out, Stderr: &out})
	if err != nil || res.ExitCode != 3 || res.OOMKilled || out.String() != "one\n" {
		t.Errorf("exit %d (oom %v), err %v, output %q; want 3, nil, %q", res.ExitCode, res.OOMKilled, err, out.String(), "one\n")
	}
	if !testenv.Eventually(10*time.Second, func() bool { return len(runtimeRunsOf(t, id)) == 0 }) {
		t.Errorf("the one-shot sandbox %s still runs after its command (runtime processes %v): its lifeline was not cut", id, runtimeRunsOf(t, id))
	}
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("runc", "--root", "/run/triage-sandbox/oci/runtime", "state", id).CombinedOutput(); err == nil {
		t.Errorf("container %s still exists: %s", id, out)
	}
	bundle := filepath.Join("/run/triage-sandbox/oci/bundles", id)
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err != nil || bytes.Contains(mounts, []byte(bundle)) {
		t.Errorf("a mount under %s is left (err %v)", bundle, err)
	}
	if _, err := os.Stat(bundle); !os.IsNotExist(err) {
		t.Errorf("bundle of %s still exists: %v", id, err)
	}
}

// An idle holder holds no more tasks than supervise.HelperTasks, what a
// process limit counted in tasks (gVisor's) leaves each helper: it
// reserves its threads before the rest of its set-up, so the threads that
// set-up needs are not made on top of the reserve (beside it, an idle
// holder held 21-23 tasks).
func TestIdleHolderTasks(t *testing.T) {
	b := newBackend(t)
	p, _ := workspacePolicy(t, profiles.RoleAgent)
	sb, err := b.Start(context.Background(), p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	var out testenv.Buffer
	if res, err := sb.Exec(context.Background(), backends.Command{Argv: []string{"true"}}, backends.Streams{Stdout: &out, Stderr: &out}); err != nil || res.ExitCode != 0 {
		t.Fatalf("true: exit %d, err %v, output %q", res.ExitCode, err, out.String())
	}
	raw, err := exec.Command("runc", "--root", "/run/triage-sandbox/oci/runtime", "state", sb.ID()).Output()
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(raw, &state); err != nil || state.Pid <= 0 {
		t.Fatalf("runc state of %s: %v (%s)", sb.ID(), err, raw)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", state.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) > supervise.HelperTasks {
		t.Errorf("the idle holder (pid %d) holds %d tasks, more than supervise.HelperTasks (%d)", state.Pid, len(tasks), supervise.HelperTasks)
	}
}

// A one-shot sandbox whose holder is killed from outside before its
// command is told as such at the command, which must not run.
func TestOneShotHolderKilledBeforeItsCommand(t *testing.T) {
	b := newBackend(t)
	p, dir := workspacePolicy(t, profiles.RoleReproducer)
	sb, err := b.Start(context.Background(), p, backends.StartOptions{OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	id := sb.ID()
	// runc kills a container only once it is created: its pid file is
	// written as it lets the holder exec.
	pidFile := filepath.Join("/run/triage-sandbox/oci/bundles", id, "pid")
	if !testenv.Eventually(10*time.Second, func() bool { _, err := os.Stat(pidFile); return err == nil }) {
		t.Fatalf("no pid file for %s within 10 s", id)
	}
	if out, err := exec.Command("runc", "--root", "/run/triage-sandbox/oci/runtime", "kill", id, "KILL").CombinedOutput(); err != nil {
		t.Fatalf("runc kill %s: %v: %s", id, err, out)
	}
	marker := filepath.Join(dir, "repros", "ran")
	var out testenv.Buffer
	_, err = sb.Exec(context.Background(), backends.Command{Argv: []string{"sh", "-c", "echo ran > repros/ran"}, Workdir: dir},
		backends.Streams{Stdout: &out, Stderr: &out})
	if err == nil || !strings.Contains(err.Error(), "SIGKILL") {
		t.Errorf("Exec after the holder was killed: err %v, output %q; want the kill told", err, out.String())
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Errorf("the command ran after its holder was killed")
	}
}

// A one-shot sandbox's staged copy that its holder cannot take (just over
// writable_size: the host's write fits the pipe and succeeds) is told as
// the start's failure, with what to do, and nothing runs: not as the end
// of a command whose result is unknown (which a start that did not wait
// for the holder's word told, in a version tried and not kept).
func TestOneShotStagingFailureIsToldAsTheStart(t *testing.T) {
	b := newBackend(t)
	p, dir := workspacePolicy(t, profiles.RoleReproducer)
	if err := os.WriteFile(filepath.Join(dir, "repros", "big"), bytes.Repeat([]byte("x"), 1<<20+12<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Staging.Size = 1 << 20 // writable_size = "1m"
	sb, err := b.Start(context.Background(), p, backends.StartOptions{OneShot: true})
	if err == nil {
		defer sb.Close(context.Background())
		var out testenv.Buffer
		_, err = sb.Exec(context.Background(), backends.Command{Argv: []string{"sh", "-c", "echo ran"}, Workdir: dir},
			backends.Streams{Stdout: &out, Stderr: &out})
		if strings.Contains(out.String(), "ran") {
			t.Errorf("the command ran on a copy that did not fit")
		}
	}
	if err == nil || !strings.Contains(err.Error(), "writable_size") || strings.Contains(err.Error(), "result is unknown") {
		t.Errorf("a copy over writable_size: %v; want it told as the start's failure", err)
	}
}

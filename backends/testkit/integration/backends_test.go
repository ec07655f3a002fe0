//go:build linux

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/builtin"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// backendNames are the backends every test here runs against: every
// registered one compiled into this binary; one that cannot run here
// (seatbelt on Linux, oci without root) is skipped with the reason. A
// backend compiled only into another binary (kubernetes) is tested
// through that binary in its own package.
var backendNames = compiledHere(builtin.Registry())

func compiledHere(reg *backends.Registry) []string {
	var here []string
	for _, n := range reg.Names() {
		if bin, _ := reg.Elsewhere(n); bin == "" {
			here = append(here, n)
		}
	}
	return here
}

// gvisor is the oci backend with gVisor's runsc as its runtime, for the
// tests that also run there; dockerGVisor the docker backend with the
// daemon's runtime runsc.
const (
	gvisor       = "oci/runsc"
	dockerGVisor = "docker/runsc"
)

// kit is one backend under test, made by the CLI's registry.
type kit struct {
	name string
	b    backends.Backend
	// runtime is the policy's [sandbox] runtime ("" : the backend's pick).
	runtime string
}

// forEachBackend runs test once per backend, as a subtest named after it.
// A backend that cannot run here is skipped with the reason, never
// silently.
func forEachBackend(t *testing.T, test func(t *testing.T, k *kit)) {
	t.Helper()
	for _, name := range backendNames {
		t.Run(name, func(t *testing.T) {
			test(t, newKit(t, name))
		})
	}
}

// forEachBackendAnd is forEachBackend over more backends: gvisor,
// dockerGVisor (skipped where their runtime is not installed).
func forEachBackendAnd(t *testing.T, more []string, test func(t *testing.T, k *kit)) {
	t.Helper()
	for _, name := range append(slices.Clone(backendNames), more...) {
		t.Run(name, func(t *testing.T) {
			test(t, newKit(t, name))
		})
	}
}

// newKit makes the named backend from the CLI's registry, with the static
// binary as its init, or skips when it cannot run here. Whether it can is
// asked before the binary is built.
func newKit(t testing.TB, name string) *kit {
	t.Helper()
	testenv.SkipShort(t, "runs commands in real sandboxes of every backend")
	ctx := context.Background()
	k := &kit{name: name}
	if name == gvisor {
		if _, err := exec.LookPath("runsc"); err != nil {
			t.Skip("runsc (gVisor) is not installed: TRIAGE_SANDBOX_GVISOR=1 scripts/setup.sh installs it")
		}
		k.name, k.runtime = oci.Name, "runsc"
	}
	if name == dockerGVisor {
		testenv.RequireDocker(t)
		if out, err := exec.Command("docker", "info", "--format", "{{json .Runtimes}}").Output(); err != nil || !strings.Contains(string(out), `"runsc"`) {
			t.Skip("the Docker daemon has no runtime runsc: TRIAGE_SANDBOX_GVISOR=1 scripts/setup.sh registers it")
		}
		k.name, k.runtime = docker.Name, "runsc"
	}
	if k.name == docker.Name {
		testenv.RequireDocker(t) // fails, not skips, where the daemon is required
	}
	reg := builtin.Registry()
	b, err := reg.New(k.name, backends.Env{})
	if err != nil {
		t.Fatalf("making the %s backend: %v", k.name, err)
	}
	if err := b.Available(ctx); err != nil {
		t.Skipf("the %s backend cannot run here: %v", k.name, err)
	}
	if k.name == oci.Name {
		// The image's root is unpacked from the Docker daemon's image.
		testenv.RequireDocker(t)
	}
	// The small binary runs inside (holder, supervisor, local helper), as
	// in a release; the CLI's binary stays the one run beside.
	if k.b, err = reg.New(k.name, backends.Env{SelfExe: testenv.Binary(t), InsideExe: testenv.InsideBinary(t)}); err != nil {
		t.Fatalf("making the %s backend: %v", k.name, err)
	}
	return k
}

// fixture is a workspace with a checkout beside it, as ai-triager lays out.
type fixture struct {
	root, checkout string
	cfg            *config.File
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	return newFixtureIn(t, t.TempDir())
}

// shortFixture is newFixture in a directory with a short name, for paths
// that must fit a unix socket's address (108 bytes), whatever the test's
// name.
func shortFixture(t testing.TB) fixture {
	t.Helper()
	dir, err := os.MkdirTemp("", "ts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return newFixtureIn(t, dir)
}

func newFixtureIn(t testing.TB, dir string) fixture {
	t.Helper()
	// t.TempDir is 0700 and owned by the test's uid; the sandbox identity
	// must be able to traverse it, as a real workspace's parents allow.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := fixture{root: filepath.Join(dir, "ws"), checkout: filepath.Join(dir, "widgets")}
	for _, d := range []string{f.root, f.checkout} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.checkout, "setup.py"), []byte("print('widgets')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(f.root, "triage.toml")
	body := "[project]\ncheckout = \"../widgets\"\n[repro]\ntimeout = 60\n[sandbox]\nnetwork = false\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	return f
}

// currentHost is the caller's host facts with a fixed PATH, the given
// extra environment and a home of its own.
func currentHost(t testing.TB, env ...string) policy.Host {
	t.Helper()
	h, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	h.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}, env...)
	h.Home = t.TempDir()
	return h
}

// build compiles the role's policy for this backend, with its capabilities
// (the local backend's then has host roots as its base, not an image).
func (k *kit) build(t testing.TB, f fixture, role profiles.Role, host policy.Host) *policy.Policy {
	t.Helper()
	p, err := policy.Build(f.cfg, role, host, policy.Options{Backend: k.name, Capabilities: k.b.Capabilities()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Backend != k.name {
		t.Fatalf("the policy is for backend %q, want %q", p.Backend, k.name)
	}
	if k.runtime != "" {
		p.Runtime = k.runtime
	}
	return p
}

type runOut struct {
	res            backends.Result
	stdout, stderr string
	// started is when the sandbox was up and the command about to run.
	started time.Time
}

// run is the one-shot path (start, exec, close) with raw output; it then
// checks that nothing the run made is left.
func (k *kit) run(t *testing.T, p *policy.Policy, timeout time.Duration, argv ...string) runOut {
	t.Helper()
	w := k.watch()
	var stdout, stderr bytes.Buffer
	var started time.Time
	res, err := sandbox.Run(context.Background(), k.b, sandbox.Request{
		Policy: p, Timeout: timeout, Command: backends.Command{Argv: argv},
		Streams: backends.Streams{Stdout: &stdout, Stderr: &stderr},
		Started: func() { started = time.Now(); w.started() },
	})
	if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	k.assertGone(t, res.Sandbox, w)
	return runOut{res.Result, stdout.String(), stderr.String(), started}
}

// runOutcome is the one-shot path as the CLI takes it: stdout and stderr
// together, redacted; it then checks that nothing the run made is left.
func (k *kit) runOutcome(t *testing.T, p *policy.Policy, argv ...string) (sandbox.Outcome, string) {
	t.Helper()
	return k.runOutcomeCtx(t, context.Background(), p, argv...)
}

// runOutcomeCtx is runOutcome with ctx (the egress proxy's test hook).
func (k *kit) runOutcomeCtx(t *testing.T, ctx context.Context, p *policy.Policy, argv ...string) (sandbox.Outcome, string) {
	t.Helper()
	w := k.watch()
	var out testenv.Buffer
	res, err := sandbox.Run(ctx, k.b, sandbox.Request{
		Policy: p, Command: backends.Command{Argv: argv},
		Streams:  backends.Streams{Stdout: &out, Stderr: &out},
		Redactor: output.NewRedactor(nil, output.DefaultRules()),
		Started:  w.started,
	})
	if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	k.assertGone(t, res.Sandbox, w)
	return res, out.String()
}

// stateRoot is where the oci and local backends keep their state as this
// caller (their defaultStateDir).
func stateRoot(backend string) string {
	if os.Geteuid() == 0 {
		return filepath.Join("/run/triage-sandbox", backend)
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "triage-sandbox", backend)
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("triage-sandbox-%d", os.Geteuid()), backend)
}

// localOwner is the local backend's ownership record (owner.json in the
// sandbox's state dir): who started it and its helper.
type localOwner struct {
	PID      int      `json:"pid"`
	Start    string   `json:"start"`
	Helper   int      `json:"helper_pid"`
	HelperAt string   `json:"helper_start"`
	Cgroups  []string `json:"cgroups"`
}

// watcher notes, while a sandbox runs, what it is made of that is gone
// from its records once it is closed: the local backend's helper pid and
// cgroups (its state dir, where they are recorded, is removed).
type watcher struct {
	backend string
	// local sandboxes this test process had running before the start:
	// none of them is the one watched.
	before map[string]bool
	// found: local sandbox id -> its record, noted once the sandbox is up.
	found map[string]localOwner
	err   error
}

func (k *kit) watch() *watcher {
	w := &watcher{backend: k.name, before: map[string]bool{}, found: map[string]localOwner{}}
	if k.name == local.Name {
		for id := range ownLocalSandboxes() {
			w.before[id] = true
		}
	}
	return w
}

// started runs once the sandbox is up, before its command: the local
// backend's record of it is read then.
func (w *watcher) started() {
	if w.backend != local.Name {
		return
	}
	for id, rec := range ownLocalSandboxes() {
		if !w.before[id] {
			w.found[id] = rec
		}
	}
	if len(w.found) == 0 {
		w.err = fmt.Errorf("no local sandbox of this test process (pid %d) recorded under %s once it was up", os.Getpid(), stateRoot(local.Name))
	}
}

// startedAs notes the record of the local sandbox id (a session started
// by the test itself).
func (w *watcher) startedAs(t *testing.T, id string) {
	t.Helper()
	if w.backend != local.Name {
		return
	}
	rec, err := readLocalOwner(filepath.Join(stateRoot(local.Name), id))
	if err != nil {
		t.Fatalf("the local sandbox %s has no ownership record while it runs: %v", id, err)
	}
	w.found[id] = rec
}

// ownLocalSandboxes are the local sandboxes whose ownership record names
// this test process as their owner.
func ownLocalSandboxes() map[string]localOwner {
	out := map[string]localOwner{}
	entries, _ := os.ReadDir(stateRoot(local.Name))
	for _, e := range entries {
		rec, err := readLocalOwner(filepath.Join(stateRoot(local.Name), e.Name()))
		if err == nil && rec.PID == os.Getpid() {
			out[e.Name()] = rec
		}
	}
	return out
}

func readLocalOwner(dir string) (localOwner, error) {
	var rec localOwner
	raw, err := os.ReadFile(filepath.Join(dir, "owner.json"))
	if err == nil {
		err = json.Unmarshal(raw, &rec)
	}
	return rec, err
}

// assertGone checks that nothing the sandbox id was made of is left, as
// each backend keeps it; it judges only what this test made.
func (k *kit) assertGone(t *testing.T, id string, w *watcher) {
	t.Helper()
	if id == "" {
		t.Fatalf("the result names no sandbox")
	}
	for _, l := range k.left(id, w) {
		t.Error(l)
	}
}

// left lists what of the sandbox id is left on this machine, as each
// backend keeps it (nil: nothing).
func (k *kit) left(id string, w *watcher) []string {
	var out []string
	switch k.name {
	case docker.Name:
		// The container is removed (AutoRemove or removal).
		if err := containerGone(k.b.(*docker.Backend).Client(), id); err != nil {
			out = append(out, err.Error())
		}
	case oci.Name:
		root := stateRoot(oci.Name)
		for _, dir := range []string{filepath.Join(root, "bundles", id), filepath.Join(root, "runtime", id)} {
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				out = append(out, fmt.Sprintf("%s still exists after the run (err=%v)", dir, err))
			}
		}
		for _, m := range mountsNaming(id) {
			out = append(out, fmt.Sprintf("mount still there for sandbox %s: %s", id, m))
		}
	case local.Name:
		out = append(out, w.localLeft(id)...)
	default:
		return append(out, fmt.Sprintf("no gone check for backend %q", k.name))
	}
	if k.name != docker.Name {
		for _, pid := range processesNaming(id) {
			out = append(out, fmt.Sprintf("process %d still runs for sandbox %s: %s", pid, id, cmdline(pid)))
		}
	}
	return out
}

// localLeft is left for the local backend: its state directory, its
// helper and its cgroups, by the record seen while it ran.
func (w *watcher) localLeft(id string) []string {
	var out []string
	if w.err != nil {
		out = append(out, w.err.Error())
	}
	rec, ok := w.found[id]
	if !ok {
		out = append(out, fmt.Sprintf("the result names sandbox %q, but the one seen running was %v", id, keys(w.found)))
	}
	dir := filepath.Join(stateRoot(local.Name), id)
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		out = append(out, fmt.Sprintf("%s still exists after the run (err=%v)", dir, err))
	}
	if !ok {
		return out
	}
	if rec.Helper <= 0 || rec.HelperAt == "" {
		out = append(out, fmt.Sprintf("the record of %s names no helper: %+v", id, rec))
	} else if ownership.ProcessStart(rec.Helper) == rec.HelperAt {
		out = append(out, fmt.Sprintf("the helper of %s (pid %d) still runs: %s", id, rec.Helper, cmdline(rec.Helper)))
	}
	for _, cg := range rec.Cgroups {
		if _, err := os.Lstat(cg); !errors.Is(err, os.ErrNotExist) {
			out = append(out, fmt.Sprintf("cgroup %s of %s still exists (err=%v)", cg, id, err))
		}
	}
	return out
}

// assertContainerGone checks the container no longer exists.
func assertContainerGone(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	if err := containerGone(cli, id); err != nil {
		t.Fatal(err)
	}
}

// containerGone says whether the container no longer exists; the daemon
// may still be removing it, so it waits (generously: the machine is busy).
func containerGone(cli *client.Client, id string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("container %s still exists after the run (err=%v)", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesNaming lists the processes whose command line contains s.
func processesNaming(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if strings.Contains(cmdline(pid), s) {
			out = append(out, pid)
		}
	}
	return out
}

func cmdline(pid int) string {
	raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
}

// mountsNaming lists this mount namespace's mount points that contain s.
func mountsNaming(s string) []string {
	raw, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.Contains(f[4], s) {
			out = append(out, f[4])
		}
	}
	return out
}

func keys(m map[string]localOwner) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

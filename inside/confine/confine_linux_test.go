package confine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestMain also serves as the helper and its child: namespaces and
// restrictions must be applied in a fresh process, so tests re-exec the
// test binary.
func init() {
	if os.Getenv(envMode) == modeHelper {
		runtime.LockOSThread() // main stays on the leader: see TestMain
	}
}

func TestMain(m *testing.M) {
	switch os.Getenv(envMode) {
	case modeHelper:
		// The real helper forks from the warden's thread, never the
		// thread group leader; the helper here does the same on purpose
		// (init keeps main on the leader), so /proc/self is not the forker.
		go helperMain()
		select {}
	case modeChild:
		childMain()
	case modeLaunch:
		launchMain()
	case modeProbeHolder:
		probeHolderMain()
	}
	os.Exit(m.Run())
}

const nobody = 65534

// fixture is the host side of a helper run: directories to bind, and what
// they held before.
type fixture struct {
	root, ro, rw, unlisted string
	canary                 string
}

// newFixture lays out the host directories under root.
func newFixture(t *testing.T, root string) fixture {
	t.Helper()
	f := fixture{root: root, ro: filepath.Join(root, "ro"), rw: filepath.Join(root, "rw"),
		unlisted: filepath.Join(root, "unlisted"), canary: "canary-" + t.Name()}
	write := func(p, data string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.ro, "file"), "data")
	write(filepath.Join(f.ro, "secret"), f.canary)
	write(filepath.Join(f.ro, "secretdir", "key"), f.canary)
	write(filepath.Join(f.unlisted, "file"), "data")
	if err := os.Mkdir(f.rw, 0o755); err != nil {
		t.Fatal(err)
	}
	// A writable mount under the read-only source: the bind must make it
	// read-only too.
	sub := filepath.Join(f.ro, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=65536,mode=0777"); err != nil {
		t.Fatalf("mounting a tmpfs under the fixture: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(sub, syscall.MNT_DETACH) })
	// Permissions that let nobody write, so only the mounts can refuse.
	for _, d := range []string{root, f.unlisted} {
		chmod(t, d, 0o755)
	}
	for _, d := range []string{f.ro, f.rw} {
		chmod(t, d, 0o777)
	}
	return f
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// snapshot records every path under root with its mode, size and mtime.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = fmt.Sprintf("%v %v %d", st.Mode(), st.ModTime(), st.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// systemRoots binds or links what a dynamically linked test binary needs:
// /usr, and /lib, /lib64, /bin as the host has them (symlinks on a
// merged-/usr host).
func systemRoots(t *testing.T) ([]Bind, []Symlink, []string) {
	t.Helper()
	binds := []Bind{{Source: "/usr"}}
	var links []Symlink
	ro := []string{"/usr"}
	for _, p := range []string{"/lib", "/lib64", "/bin"} {
		st, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				t.Fatal(err)
			}
			links = append(links, Symlink{Path: p, Target: target})
		default:
			binds = append(binds, Bind{Source: p})
			ro = append(ro, p)
		}
	}
	return binds, links, ro
}

func testPlan(t *testing.T, f fixture, exe string) Plan {
	binds, links, ro := systemRoots(t)
	binds = append(binds,
		Bind{Source: exe, Target: "/confine.test"},
		Bind{Source: f.ro, Target: "/work/ro"},
		Bind{Source: f.rw, Target: "/work/rw", Write: true},
		Bind{Source: f.unlisted, Target: "/work/unlisted"},
	)
	masks := []Mask{{Path: "/work/ro/secret"}, {Path: "/work/ro/secretdir"}, {Path: "/work/ro/absent"}}
	for _, m := range profiles.KernelMaskedPaths() {
		masks = append(masks, Mask{Path: m})
	}
	return Plan{
		Binds:      binds,
		Tmpfs:      []Tmpfs{{Target: "/work/tmp", Size: 8 << 20, Inodes: 1024, Mode: 0o755, UID: nobody, GID: nobody}},
		Symlinks:   links,
		ReadOnly:   profiles.KernelReadonlyPaths(),
		Masks:      masks,
		Sys:        true,
		DevShmSize: 1 << 20,
		Hostname:   "confine-test",
		Workdir:    "/work/tmp",
		UID:        nobody,
		GID:        nobody,
		Landlock: LandlockPlan{
			MinABI:    1,
			ReadOnly:  append(ro, "/confine.test", "/work/ro"),
			ReadWrite: []string{"/work/rw", "/work/tmp"},
		},
		Seccomp: SeccompPlan{Set: "default"},
		Rlimits: []Rlimit{{Name: "CORE"}, {Name: "NOFILE", Soft: 512, Hard: 1024}, {Name: "FSIZE", Soft: 64 << 20, Hard: 64 << 20}},
	}
}

// startHelper runs exe as the helper (in the namespaces Namespaces gives
// for hostUID and hostGID, or as launch mode's caller with cred) with plan
// on fd 3, and returns its stdout.
func startHelper(exe string, plan []byte, specJSON string, uid, gid, hostUID, hostGID int,
	cred *syscall.Credential) ([]byte, error) {
	mode := modeHelper
	var attr *syscall.SysProcAttr
	if cred != nil {
		mode, attr = modeLaunch, &syscall.SysProcAttr{Credential: cred}
	} else {
		var err error
		if attr, err = Namespaces(uid, gid, hostUID, hostGID); err != nil {
			return nil, err
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), envMode+"="+mode, envSpec+"="+specJSON)
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = attr
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Pdeathsig follows the thread that started the helper.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the %s: %w", mode, err)
	}
	_, werr := w.Write(plan)
	w.Close()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%s: %w (plan write: %v)\nstderr:\n%s", mode, err, werr, errb.String())
	}
	return out.Bytes(), nil
}

// launchMain is the unprivileged caller of the non-root test: it starts
// the helper as the local backend would for a user without root.
func launchMain() {
	if os.Geteuid() == 0 {
		fatalf("launch mode must run unprivileged")
	}
	plan, err := io.ReadAll(os.NewFile(3, "plan"))
	if err != nil {
		fatalf("reading the plan: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		fatalf("%v", err)
	}
	out, err := startHelper(exe, plan, os.Getenv(envSpec), nobody, nobody, os.Geteuid(), os.Getegid(), nil)
	if err != nil {
		fatalf("%v", err)
	}
	os.Stdout.Write(out)
	os.Exit(0)
}

func TestHelperConfinement(t *testing.T) {
	testenv.RequireRoot(t, "maps the sandbox's nobody to the host's")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testConfinement(t, t.TempDir(), exe, nil)
}

// TestRestrictRefusesForkerWithBoundingSet: without DropForkerBounding the
// thread that starts every child keeps its bounding set, and Restrict
// refuses to go on.
func TestRestrictRefusesForkerWithBoundingSet(t *testing.T) {
	testenv.RequireRoot(t, "maps the sandbox's nobody to the host's")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, t.TempDir())
	s := spec{RO: "/work/ro", RW: "/work/rw", Tmpfs: "/work/tmp", Unlisted: "/work/unlisted",
		Exe: "/confine.test", UID: nobody, GID: nobody, Hostname: "confine-test", KeepForkerBounding: true}
	planJSON, err := json.Marshal(testPlan(t, f, exe))
	if err != nil {
		t.Fatal(err)
	}
	specJSON, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := startHelper(exe, planJSON, string(specJSON), nobody, nobody, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var results []result
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("results: %v: %q", err, out)
	}
	if len(results) != 1 {
		t.Fatalf("results = %+v, want the one about Restrict", results)
	}
	if results[0].Err != "" {
		t.Errorf("%s: %s", results[0].Name, results[0].Err)
	}
}

// TestHelperConfinementUnprivileged runs the same checks with the helper
// started by an unprivileged user (nobody), who can map only its own ids.
func TestHelperConfinementUnprivileged(t *testing.T) {
	testenv.RequireRoot(t, "to become nobody")
	if l := Probe().UnprivilegedUserNS; !l.Available {
		t.Skipf("unprivileged user namespaces: %s", l.Detail)
	}
	// Everything nobody starts from must be reachable by nobody.
	root, err := os.MkdirTemp("", "confine-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	chmod(t, root, 0o755)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyExe := filepath.Join(root, "confine.test")
	if err := os.WriteFile(copyExe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	testConfinement(t, filepath.Join(root, "fixture"), copyExe,
		&syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}})
}

// testConfinement runs the helper over a fixture under root (started by
// the test itself, or through launch mode as cred) and checks what every
// check inside reported, then what the host saw.
func testConfinement(t *testing.T, root, exe string, cred *syscall.Credential) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, root)
	before := snapshot(t, f.root)
	s := spec{RO: "/work/ro", RW: "/work/rw", Tmpfs: "/work/tmp", Unlisted: "/work/unlisted",
		Exe: "/confine.test", UID: nobody, GID: nobody, Hostname: "confine-test", Canary: f.canary}
	for _, p := range profiles.KernelMaskedPaths() {
		if _, err := os.Stat(p); err == nil {
			s.KernelMasks = append(s.KernelMasks, p)
		}
	}
	// Enter's scratch names, which must not appear in the host's /tmp.
	scratch := map[string]bool{}
	for _, p := range []string{"/tmp/oldroot", "/tmp/newroot", "/tmp/empty"} {
		_, err := os.Lstat(p)
		scratch[p] = err == nil
	}
	planJSON, err := json.Marshal(testPlan(t, f, exe))
	if err != nil {
		t.Fatal(err)
	}
	specJSON, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	out, err := startHelper(exe, planJSON, string(specJSON), nobody, nobody, 0, 0, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helper ran in %v", time.Since(start))

	var results []result
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("results: %v: %q", err, out)
	}
	if len(results) < 30 {
		t.Errorf("only %d checks ran", len(results))
	}
	for _, r := range results {
		if r.Err != "" {
			t.Errorf("%s: %s", r.Name, r.Err)
		}
	}
	if bytes.Contains(out, []byte(f.canary)) {
		t.Error("the canary's content reached the output")
	}
	checkHost(t, f, before, scratch)
}

// checkHost: the writes landed in the rw dir, as nobody; nothing else under
// the fixture changed, and nothing was left in the host's /tmp.
func checkHost(t *testing.T, f fixture, before map[string]string, scratch map[string]bool) {
	t.Helper()
	after := snapshot(t, f.root)
	for _, name := range []string{"out-helper.txt", "out-child.txt"} {
		p := filepath.Join(f.rw, name)
		st, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid != nobody {
			t.Errorf("%s: owned by host uid %d, want %d (the sandbox's nobody)", p, uid, nobody)
		}
		delete(after, p)
	}
	delete(after, f.rw)
	delete(before, f.rw)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("host path changed: %s: %q -> %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("host path appeared: %s", p)
		}
	}
	for p, existed := range scratch {
		if _, err := os.Lstat(p); err == nil && !existed {
			t.Errorf("%s appeared on the host", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.ro, "secret")); string(b) != f.canary {
		t.Errorf("host canary changed: %q", b)
	}
}

package selftest

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/seatbelt"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// viewAs builds the catalogue as it is made on goos.
func viewAs(t *testing.T, goos string) {
	t.Helper()
	saved := hostOS
	hostOS = goos
	t.Cleanup(func() { hostOS = saved })
}

// stepEnv is enough of a planted selftest to build every check's steps.
func stepEnv() *Env {
	const d = "/var/tmp/triage-selftest-1"
	c := &Canaries{Dir: d, Home: d + "/home", Root: d + "/ws", Checkout: d + "/checkout", Runner: d + "/runner",
		Token: "canary-t", SentinelToken: "canary-s",
		Env:      map[string]string{"GITHUB_TOKEN": "ghp_canary-t", "GITHUB_ENV": d + "/runner/github_env"},
		Loopback: &Listener{Addr: "127.0.0.1:9"}, Sockets: []string{d + "/home/.ssh/agent.sock"},
		MountSocket: d + "/checkout/.git/fsmonitor--daemon.ipc", RuntimeSockets: []string{d + "/home/.docker/run/docker.sock"}}
	return &Env{C: c, P: &policy.Policy{}, Scratch: policy.ScratchPaths{Home: "/private/var/folders/x/home", Tmp: "/private/var/folders/x/tmp"}}
}

// TestSeatbeltCatalogueOnMacOS is the selftest as `--backend seatbelt`
// runs it on macOS: what seatbelt does not enforce is not applicable, with
// the reason; everything else runs for real, with ops that work on macOS.
func TestSeatbeltCatalogueOnMacOS(t *testing.T) {
	viewAs(t, "darwin")
	b, err := seatbelt.New(backends.Env{SelfExe: "/usr/local/bin/triage-sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	wantNA := []string{"ENV-02", "FS-06", "IPC-05", "META-01", "NET-11", "NET-12",
		"NET-20", "NET-21", "NET-22", "NET-23", "NET-24", "NET-25", "NET-26", "NET-27", "NET-28", "PRIV-01", "PRIV-02", "PRIV-03",
		"PRIV-04", "PRIV-05", "PROC-04", "RES-01", "RES-02", "RES-06", "RES-07"}
	// Secrets, environment, writes and network: the core of the gate.
	core := []string{"FS-01", "FS-02", "FS-03", "FS-04", "FS-09", "FS-10", "FS-11", "ENV-01", "IPC-01", "IPC-04", "IPC-06", "IPC-07",
		"TTY-01", "WR-01", "WR-02", "WR-03", "WR-03b", "WR-04", "WR-05", "WR-06", "WR-07", "WR-08", "WR-09", "WR-11",
		"CI-01", "NET-01", "NET-03", "NET-10", "NET-13", "PROC-02", "PROC-03", "OUT-01", "OUT-02",
		"C-01", "C-02", "C-03", "C-04", "C-05", "C-07", "C-08", "C-09", "C-10", "C-10b", "C-11"}
	e := stepEnv()
	for _, role := range profiles.Roles() {
		run, na := applicable(Catalogue(), role, b)
		var runIDs, naIDs []string
		for _, ch := range run {
			runIDs = append(runIDs, ch.ID)
		}
		t.Logf("%s, seatbelt on macOS: %d applicable: %s", role, len(run), strings.Join(runIDs, " "))
		for _, r := range na {
			naIDs = append(naIDs, r.ID)
			t.Logf("  n/a %-7s %s", r.ID, r.Evidence)
			if r.Status != StatusNotApplicable || r.OK || !strings.HasPrefix(r.Evidence, "the seatbelt backend does not enforce ") ||
				strings.Contains(r.Evidence, "()") {
				t.Errorf("%s: not applicable without a reason: %+v", r.ID, r)
			}
		}
		slices.Sort(naIDs)
		if !slices.Equal(naIDs, wantNA) {
			t.Errorf("%s: not applicable %v, want %v", role, naIDs, wantNA)
		}
		for _, id := range core {
			if !slices.Contains(runIDs, id) {
				t.Errorf("%s: %s is not applicable on seatbelt", role, id)
			}
		}
		if role == profiles.RoleReproducer && !slices.Contains(runIDs, "C-06") {
			t.Errorf("the browser control does not run for the reproducer")
		}
		for _, ch := range run {
			if ch.Steps == nil {
				continue
			}
			for _, s := range ch.Steps(e) {
				if !probe.RunsOn(s.Op, "darwin") {
					t.Errorf("%s: op %s does not run on macOS", ch.ID, s.Op)
				}
				for _, p := range s.List {
					if strings.HasPrefix(p, "/dev/shm") || strings.HasPrefix(p, "/proc/") {
						t.Errorf("%s: %s does not exist on macOS", ch.ID, p)
					}
				}
			}
		}
	}
	c04, ipc01 := find(t, "C-04"), find(t, "IPC-01")
	if strings.Contains(c04.Name, "/dev/shm") {
		t.Errorf("C-04 on macOS: %q", c04.Name)
	}
	if l := ipc01.Steps(e)[0].List; !slices.Contains(l, e.C.RuntimeSockets[0]) || !slices.Contains(l, "/var/run/docker.sock") {
		t.Errorf("IPC-01 on macOS probes %v: the home's runtime socket canary and /var/run are both needed", l)
	}
}

// TestLinuxCatalogueUnchanged: on Linux, with docker's capabilities, every
// check applies and the OS-dependent pieces are as before.
func TestLinuxCatalogueUnchanged(t *testing.T) {
	viewAs(t, "linux")
	b := &backendtest.Backend{BackendName: "docker", Caps: docker.Capabilities()}
	for _, role := range profiles.Roles() {
		if _, na := applicable(Catalogue(), role, b); len(na) != 0 {
			t.Errorf("%s: not applicable on docker: %+v", role, na)
		}
	}
	e := stepEnv()
	e.C.RuntimeSockets = nil // planted on macOS only
	c04 := find(t, "C-04")
	if c04.Name != "use scratch space (TMPDIR, HOME, /dev/shm)" || !slices.Equal(c04.Steps(e)[0].List, []string{e.Scratch.Tmp, e.Scratch.Home, "/dev/shm"}) {
		t.Errorf("C-04 on Linux: %q %v", c04.Name, c04.Steps(e)[0].List)
	}
	want := []string{"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock", "/run/podman/podman.sock"}
	if l := find(t, "IPC-01").Steps(e)[0].List; !slices.Equal(l, want) {
		t.Errorf("IPC-01 on Linux probes %v, want %v", l, want)
	}
}

func find(t *testing.T, id string) Check {
	t.Helper()
	for _, ch := range Catalogue() {
		if ch.ID == id {
			return ch
		}
	}
	t.Fatalf("no check %s", id)
	return Check{}
}

func TestProcArgv(t *testing.T) {
	buf := binary.NativeEndian.AppendUint32(nil, 3)
	buf = append(buf, "/usr/local/bin/triage-sandbox\x00\x00\x00\x00"...)
	buf = append(buf, "triage-sandbox\x00__probe-child\x00survivor-canary-x\x00HOME=/Users/me\x00SECRET=survivor-no\x00"...)
	if got := procArgv(buf); !slices.Equal(got, []string{"triage-sandbox", "__probe-child", "survivor-canary-x"}) {
		t.Errorf("argv %q", got)
	}
	for _, b := range [][]byte{nil, {1, 0}, binary.NativeEndian.AppendUint32(nil, 2)} {
		if got := procArgv(b); len(got) != 0 {
			t.Errorf("%v: argv %q from a short buffer", b, got)
		}
	}
}

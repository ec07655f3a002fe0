package docker_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// hostListener is a unix socket a host daemon would keep in the workspace:
// world-writable, so the sandbox's uid is not what stops a connection
// (the normal-user case, where the sandbox runs as the socket's owner).
type hostListener struct {
	path     string
	accepted atomic.Int64
}

func listenHost(t *testing.T, path string) *hostListener {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	h := &hostListener{path: path}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return h
}

// connectScript connects to each argument and prints CONNECTED or the
// errno name, one line per path.
const connectScript = `
import errno, socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p)
        print("CONNECTED", p)
    except OSError as e:
        print(errno.errorcode.get(e.errno, e.errno), p)
`

// TestHostSocketUnderMountUnreachable: git's fsmonitor socket in the
// checkout's .git and a daemon's socket in a workspace subdirectory are
// found at policy build and masked, so connecting from inside fails and the
// host listeners accept nothing. Controls: the host connects to both, and
// the same socket left out of Masked is reachable from inside (the probe
// can succeed; the mask is what stops it).
func TestHostSocketUnderMountUnreachable(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(filepath.Join(f.checkout, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	fsmon := listenHost(t, filepath.Join(f.checkout, ".git", "fsmonitor--daemon.ipc"))
	app := listenHost(t, filepath.Join(f.root, "run", "app.sock"))
	ctl := listenHost(t, filepath.Join(f.root, "run", "control.sock"))

	p := build(t, f, "reproducer", currentHost(t))
	for _, h := range []*hostListener{fsmon, app, ctl} {
		if !slices.Contains(p.Masked, h.path) {
			t.Fatalf("the policy does not mask %s: %q", h.path, p.Masked)
		}
	}
	// The control socket is left unmasked on purpose.
	p.Masked = slices.DeleteFunc(p.Masked, func(m string) bool { return m == ctl.path })

	out := run(t, p, 0, "python3", "-c", connectScript, fsmon.path, app.path, ctl.path)
	if out.res.ExitCode != 0 {
		t.Fatalf("exit %d: %s %s", out.res.ExitCode, out.stdout, out.stderr)
	}
	for _, h := range []*hostListener{fsmon, app} {
		if strings.Contains(out.stdout, "CONNECTED "+h.path) || h.accepted.Load() != 0 {
			t.Errorf("the sandbox reached %s (accepted %d):\n%s", h.path, h.accepted.Load(), out.stdout)
		}
	}
	if !strings.Contains(out.stdout, "CONNECTED "+ctl.path) || ctl.accepted.Load() != 1 {
		t.Errorf("control: the unmasked socket was not reachable from inside (accepted %d), so the probe proves nothing:\n%s%s",
			ctl.accepted.Load(), out.stdout, out.stderr)
	}
	t.Logf("inside:\n%s", out.stdout)

	// Control from the host: both listeners work.
	for _, h := range []*hostListener{fsmon, app} {
		c, err := net.Dial("unix", h.path)
		if err != nil {
			t.Fatalf("control: the host cannot connect to %s: %v", h.path, err)
		}
		c.Close()
		if !testenv.Eventually(5*time.Second, func() bool { return h.accepted.Load() == 1 }) {
			t.Errorf("control: %s accepted %d connections from the host, want 1", h.path, h.accepted.Load())
		}
	}
}

// TestVsockRefused: inside the sandbox socket(AF_VSOCK) fails with
// EAFNOSUPPORT (the sandbox's seccomp profile), while AF_UNIX and AF_INET
// work. Control: on the host the same call succeeds or fails otherwise
// (this machine is a VM with /dev/vsock), so the errno inside is the
// profile's, not the kernel's.
func TestVsockRefused(t *testing.T) {
	fd, hostErr := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	if hostErr == nil {
		unix.Close(fd)
	}
	if errors.Is(hostErr, unix.EAFNOSUPPORT) {
		t.Skip("this kernel has no AF_VSOCK: EAFNOSUPPORT inside would prove nothing")
	}
	t.Logf("host: socket(AF_VSOCK) = %v", hostErr)

	f := newFixture(t)
	p := build(t, f, "reproducer", currentHost(t))
	script := `
import errno, socket
def try_(family, kind=socket.SOCK_STREAM):
    try:
        socket.socket(family, kind).close()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print("AF_VSOCK", try_(40))
print("AF_VSOCK_DGRAM", try_(40, socket.SOCK_DGRAM))
print("AF_UNIX", try_(socket.AF_UNIX))
print("AF_INET", try_(socket.AF_INET))
print("AF_BLUETOOTH", try_(31, socket.SOCK_SEQPACKET))
print("AF_KCM", try_(41, socket.SOCK_DGRAM))
try:
    socket.socketpair(40)
    print("socketpair_VSOCK ok")
except OSError as e:
    print("socketpair_VSOCK", errno.errorcode.get(e.errno, str(e.errno)))
`
	out := run(t, p, 0, "python3", "-c", script)
	if out.res.ExitCode != 0 {
		t.Fatalf("exit %d: %s %s", out.res.ExitCode, out.stdout, out.stderr)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"AF_VSOCK": "EAFNOSUPPORT", "AF_VSOCK_DGRAM": "EAFNOSUPPORT", "socketpair_VSOCK": "EAFNOSUPPORT",
		"AF_BLUETOOTH": "EAFNOSUPPORT", "AF_KCM": "EAFNOSUPPORT", "AF_UNIX": "ok", "AF_INET": "ok",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %s\n%s", k, got[k], v, out.stdout)
		}
	}
}

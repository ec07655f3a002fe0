//go:build linux

package integration_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// hostSocket is a host daemon's unix socket under a mount, world-writable:
// only the policy's mask stands between it and the sandbox.
type hostSocket struct {
	path     string
	accepted atomic.Int64
}

func listenUnix(t *testing.T, path string) *hostSocket {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	h := &hostSocket{path: path}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return h
}

// unixConnectScript connects to each argument and prints CONNECTED or the
// error, one line per path.
const unixConnectScript = `
import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(p)
        print("CONNECTED", p)
    except OSError as e:
        print(e.errno, p)
`

// TestHostSocketsUnderMountsUnreachable (finding #7): a host socket under
// a mount is masked however deep it is: at the top of the checkout, deep
// in its .git (not only .git's own children), past any depth bound in the
// checkout, and in the workspace. No listener accepts a connection from
// inside. Control: the host reaches every one. Under gVisor too, with and
// without a network allow-list: runsc drops the spec's masked paths, and
// serving an allow-list it connects to host sockets (--host-uds=open), so
// there the sockets are covered in a view of their mount (coverSockets).
func TestHostSocketsUnderMountsUnreachable(t *testing.T) {
	forEachBackendAnd(t, []string{gvisor}, func(t *testing.T, k *kit) {
		t.Run("no network", func(t *testing.T) { hostSocketsUnreachable(t, k, "") })
		t.Run("allow-list", func(t *testing.T) { hostSocketsUnreachable(t, k, `[]`) })
	})
}

func hostSocketsUnreachable(t *testing.T, k *kit, network string) {
	f := shortFixture(t)
	if network != "" {
		f.cfg = withNetwork(t, f, network)
	}
	deep := filepath.Join(append([]string{f.checkout}, strings.Split("a/b/c/d/e/f/g/h/i/j", "/")...)...)
	socks := []*hostSocket{
		listenUnix(t, filepath.Join(f.checkout, "top.sock")),
		listenUnix(t, filepath.Join(f.checkout, ".git", "fsmonitor--daemon.ipc")),
		listenUnix(t, filepath.Join(f.checkout, ".git", "refs", "heads", "deep.sock")),
		listenUnix(t, filepath.Join(deep, "nested.sock")),
		listenUnix(t, filepath.Join(f.root, "sub", ".git", "modules", "m", "objects", "x.sock")),
	}
	p := k.build(t, f, "reproducer", currentHost(t))
	if network != "" && p.Network.Mode != policy.NetworkProxy {
		t.Fatalf("network mode %q, want proxy", p.Network.Mode)
	}
	argv := []string{"python3", "-c", unixConnectScript}
	for _, s := range socks {
		if !slices.Contains(p.Masked, s.path) {
			t.Errorf("the policy does not mask %s", s.path)
		}
		argv = append(argv, s.path)
	}
	out := k.run(t, p, 0, argv...)
	if out.res.ExitCode != 0 {
		t.Fatalf("exit %d: %s %s", out.res.ExitCode, out.stdout, out.stderr)
	}
	for _, s := range socks {
		if strings.Contains(out.stdout, "CONNECTED "+s.path) || s.accepted.Load() != 0 {
			t.Errorf("the sandbox reached %s (accepted %d)", s.path, s.accepted.Load())
		}
	}
	t.Logf("inside:\n%s", out.stdout)
	for _, s := range socks {
		c, err := net.Dial("unix", s.path)
		if err != nil {
			t.Fatalf("control: the host cannot connect to %s: %v", s.path, err)
		}
		c.Close()
		if !testenv.Eventually(5*time.Second, func() bool { return s.accepted.Load() == 1 }) {
			t.Errorf("control: %s accepted %d connections, want 1", s.path, s.accepted.Load())
		}
	}
}

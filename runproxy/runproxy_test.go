package runproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// connect asks the proxy at sock for a tunnel to host:443 and returns the
// status code it answered.
func connect(t *testing.T, sock, host string) int {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dialling the proxy: %v", err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n", host, host)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the proxy's answer: %v", err)
	}
	res.Body.Close()
	return res.StatusCode
}

func testPolicy() *policy.Policy {
	return &policy.Policy{Network: policy.Network{Mode: policy.NetworkProxy, Key: "[sandbox] network"},
		User: policy.Identity{UID: os.Getuid(), GID: os.Getgid()}}
}

// TestRenewServesEachCommandAfresh: each serving (a session's command)
// records only its own decisions; between servings the socket is gone,
// so the sandbox reaches nothing; Close removes the directory.
func TestRenewServesEachCommandAfresh(t *testing.T) {
	t.Setenv("TMPDIR", shortTemp(t))
	t.Setenv("XDG_RUNTIME_DIR", "")
	bp, px, err := Start(context.Background(), testPolicy(), ownLoopback)
	if err != nil {
		t.Fatal(err)
	}
	if bp.Network.SocketDir != px.Dir() {
		t.Fatalf("the backend's policy names %q, the proxy's directory is %q", bp.Network.SocketDir, px.Dir())
	}
	sock := filepath.Join(px.Dir(), filepath.Base(egress.SocketInSandbox))
	px.Stop()
	if _, err := net.Dial("unix", sock); err == nil {
		t.Fatal("a stopped proxy still accepts")
	}
	for _, host := range []string{"first.example", "second.example"} {
		if err := px.Renew(); err != nil {
			t.Fatal(err)
		}
		if code := connect(t, sock, host); code != http.StatusForbidden {
			t.Fatalf("%s: status %d, want 403 (nothing is allowed)", host, code)
		}
		ds := px.End()
		if len(ds) != 1 || ds[0].Host != host || ds[0].Allowed {
			t.Fatalf("decisions of the command that asked for %s: %+v", host, ds)
		}
		if _, err := net.Dial("unix", sock); err == nil {
			t.Fatalf("after %s's command the proxy still accepts", host)
		}
	}
	if err := px.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(px.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory outlived Close: %v", err)
	}
}

// TestSweep: a directory whose owner is gone (dead, or its pid now
// another process's) goes, a live owner's stays; of the older names, a
// dead run's (its socket refuses) and an old one without a socket go, a
// live run's and a young empty one stay; other names are not touched.
func TestSweep(t *testing.T) {
	base := shortTemp(t)
	mk := func(name string) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	sock := func(d string) net.Listener {
		ln, err := net.Listen("unix", filepath.Join(d, filepath.Base(egress.SocketInSandbox)))
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	me, start := os.Getpid(), ownership.ProcessStart(os.Getpid())
	if start == "" {
		t.Fatal("no start time for this process")
	}
	owned := mk(ownerPrefix(me, start) + "1")
	reused := mk(ownerPrefix(me, start+"0") + "2")
	dead := mk(ownerPrefix(gone.Process.Pid, "1") + "3")
	live := mk(Prefix + "live")
	defer sock(live).Close()
	refusing := mk(Prefix + "dead")
	ln := sock(refusing).(*net.UnixListener)
	ln.SetUnlinkOnClose(false)
	ln.Close()
	young, old := mk(Prefix+"young"), mk(Prefix+"old")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	other := mk("someone-elses")
	Sweep(base, time.Now())
	for d, keep := range map[string]bool{owned: true, reused: false, dead: false, live: true, refusing: false, young: true, old: false, other: true} {
		_, err := os.Stat(d)
		if kept := err == nil; kept != keep {
			t.Errorf("%s: kept %v, want %v", filepath.Base(d), kept, keep)
		}
	}
}

func TestOwner(t *testing.T) {
	for _, tt := range []struct {
		name  string
		pid   int
		start string
		ok    bool
	}{
		{ownerPrefix(12, "345") + "678", 12, "345", true},
		{Prefix + "12-345-", 12, "345", true},
		{Prefix + "123456", 0, "", false},
		{Prefix + "x-345-1", 0, "", false},
		{Prefix + "12--1", 0, "", false},
		{Prefix + "12-3a-1", 0, "", false},
		{Prefix + "-1-2-3", 0, "", false},
	} {
		pid, start, ok := owner(tt.name)
		if pid != tt.pid || start != tt.start || ok != tt.ok {
			t.Errorf("owner(%q) = %d %q %v, want %d %q %v", tt.name, pid, start, ok, tt.pid, tt.start, tt.ok)
		}
	}
}

// shortTemp is a temporary directory with a short path: t.TempDir's,
// named after the test, can leave no room for a socket's name.
func shortTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestSocketPathTooLong: a base too deep for a socket's path is refused
// with the variable to change, not bind's "invalid argument".
func TestSocketPathTooLong(t *testing.T) {
	deep := filepath.Join(shortTemp(t), strings.Repeat("d", 90))
	if err := os.Mkdir(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", deep)
	t.Setenv("XDG_RUNTIME_DIR", "")
	_, _, err := Start(context.Background(), testPolicy(), ownLoopback)
	if err == nil || !strings.Contains(err.Error(), "set TMPDIR") {
		t.Fatalf("Start under a deep TMPDIR: %v, want the variable to change named", err)
	}
}

// TestBrokerAuthorityOutlivesRenew: a session's proxy is renewed per
// command, and every one presents the CA the sandbox's trust bundle holds.
func TestBrokerAuthorityOutlivesRenew(t *testing.T) {
	t.Setenv("TMPDIR", shortTemp(t))
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("GH_TOKEN", "ghp_runproxyTestVALUE0123456789abcdefghij")
	p := testPolicy()
	rules, err := allow.Parse([]string{"api.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	p.Network.Rules = rules
	p.Network.Brokers = []policy.Broker{{Name: "GH_TOKEN", Hosts: []string{"api.example.test"}, Methods: []string{"GET"}, Key: "[sandbox.agent.broker.GH_TOKEN]"}}
	p.Env = []policy.EnvVar{{Name: "GH_TOKEN", Value: policy.BrokerPlaceholder}}
	bp, px, err := Start(context.Background(), p, ownLoopback)
	if err != nil {
		t.Skipf("no system trust bundle to add the CA to, or: %v", err)
	}
	defer px.Close()
	if bp.Env[0].Value == policy.BrokerPlaceholder || strings.Contains(bp.Env[0].Value, "VALUE") {
		t.Errorf("the sandbox's GH_TOKEN is %q, want a placeholder", bp.Env[0].Value)
	}
	bundle, err := os.ReadFile(filepath.Join(px.Dir(), filepath.Base(egress.CABundleInSandbox)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ca := px.cur.BrokerCA()
		if len(ca) == 0 || !bytes.HasSuffix(bundle, ca) {
			t.Fatalf("serving %d presents a CA the trust bundle does not end with", i)
		}
		if err := px.Renew(); err != nil {
			t.Fatal(err)
		}
	}
}

// ownLoopback are the capabilities of a backend that binds the socket.
var ownLoopback = []policy.Capability{profiles.CapOwnLoopback, profiles.CapEgressProxy}

// TestStartOnHost: a backend without its own loopback gets the proxy on
// the host's loopback with a secret, no directory; it serves one run.
func TestStartOnHost(t *testing.T) {
	bp, px, err := Start(context.Background(), testPolicy(), []policy.Capability{profiles.CapEgressProxy})
	if err != nil {
		t.Fatal(err)
	}
	h := bp.Network.HostProxy
	if h == nil || h.Port == 0 || h.Secret == "" || px.Secret() != h.Secret || px.Dir() != "" {
		t.Fatalf("host proxy %+v, secret %q, dir %q", h, px.Secret(), px.Dir())
	}
	if err := px.Renew(); err == nil {
		t.Error("a proxy on the host's loopback was renewed for another command")
	}
	if err := px.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.Port))); err == nil {
		c.Close()
		t.Error("the host proxy still listens after Close")
	}
}

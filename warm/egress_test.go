package warm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// proxyBackend is the fake backend whose sandboxes stand for a holder's
// forwarder: each command asks the proxy socket the policy named at the
// start for a tunnel to the host its argv names, and prints the status.
type proxyBackend struct {
	*backendtest.Backend
	mu   sync.Mutex
	dirs map[string]string // sandbox id → socket directory
}

func (b *proxyBackend) Start(ctx context.Context, p *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	dir := p.Network.SocketDir
	sock := filepath.Join(dir, filepath.Base(egress.SocketInSandbox))
	// As the holder: no start without the proxy's socket.
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("no proxy socket at the start: %v", err)
	}
	sb, err := b.Backend.Start(ctx, p, opts)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.dirs[sb.ID()] = dir
	b.mu.Unlock()
	sb.(*backendtest.Sandbox).ExecFunc = func(_ context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
		fmt.Fprintln(out.Stdout, connectStatus(sock, cmd.Argv[0]))
		return backends.Result{Sandbox: sb.ID()}, nil
	}
	return sb, nil
}

func (b *proxyBackend) dir(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dirs[id]
}

// connectStatus is the proxy's answer to a CONNECT to host:443, or the
// error that kept it from answering.
func connectStatus(sock, host string) string {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n", host, host)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "read: " + err.Error()
	}
	res.Body.Close()
	return res.Status
}

// allowListPolicy asks for w with an allow-list that allows nothing.
func allowListPolicy(w policy.Warm) *policy.Policy {
	p := warmPolicy(w)
	p.Network = policy.Network{Mode: policy.NetworkProxy, Key: "[sandbox] network"}
	p.User = policy.Identity{UID: os.Getuid(), GID: os.Getgid()}
	return p
}

// keepInProcess runs a keeper of p on b in dir until stop (which waits
// for its end) or the test's end. In this process: End waits for the
// keeper's process to be gone.
func keepInProcess(t *testing.T, dir string, p *policy.Policy, b backends.Backend) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Keep(ctx, KeeperOptions{Dir: dir, Policy: p, Backend: b, Log: io.Discard}) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the keeper: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	if !testenv.Eventually(10*time.Second, func() bool { _, err := os.Stat(paths{dir, key(p)}.record()); return err == nil }) {
		t.Fatal("the keeper did not start")
	}
	return stop
}

// attachedRun runs host's command in a sandbox of p's keeper, as `run`
// does (it dials the keeper), and returns what it printed and the
// decisions the keeper reported with its result.
func attachedRun(t *testing.T, wb *Backend, p *policy.Policy, host string) (string, string, []egress.Decision) {
	t.Helper()
	sb, err := wb.Start(context.Background(), p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	var out testenv.Buffer
	if _, err := sb.Exec(context.Background(), backends.Command{Argv: []string{host}}, backends.Streams{Stdout: &out, Stderr: &out}); err != nil {
		t.Fatal(err)
	}
	return sb.ID(), out.String(), sb.(*remote).NetworkDecisions()
}

// TestKeeperServesTheAllowList (issue 36): a session's and each pooled
// sandbox's proxy lives in the keeper, which holds the sandbox; each
// command's result carries its own decisions only; between commands
// nothing serves the socket; the keeper's end removes every socket
// directory.
func TestKeeperServesTheAllowList(t *testing.T) {
	for _, tc := range []struct {
		name string
		warm policy.Warm
	}{
		{"session", policy.Warm{Session: "s", Idle: time.Minute}},
		{"pool", policy.Warm{Pool: 2, Idle: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", shortDir(t))
			t.Setenv("XDG_RUNTIME_DIR", "")
			dir := shortDir(t)
			p := allowListPolicy(tc.warm)
			b := &proxyBackend{Backend: backendtest.New(), dirs: map[string]string{}}
			stop := keepInProcess(t, dir, p, b)
			wb := &Backend{Backend: b, Dir: dir}
			socketDirs := map[string]bool{}
			for _, host := range []string{"first.example", "second.example", "third.example"} {
				id, out, ds := attachedRun(t, wb, p, host)
				if out != "403 Forbidden\n" {
					t.Fatalf("%s: the command saw %q, want the proxy's refusal", host, out)
				}
				if len(ds) != 1 || ds[0].Host != host || ds[0].Allowed || ds[0].Reason == "" {
					t.Fatalf("%s: the keeper reported %+v, want this command's refusal only", host, ds)
				}
				sd := b.dir(id)
				socketDirs[sd] = true
				sock := filepath.Join(sd, filepath.Base(egress.SocketInSandbox))
				if _, err := net.Dial("unix", sock); err == nil {
					t.Fatalf("%s: after the command the proxy still serves %s", host, sock)
				}
			}
			wantDirs := 1
			if tc.warm.Pool > 0 {
				wantDirs = 3 // a pooled sandbox per command, each its own proxy
			}
			if len(socketDirs) != wantDirs {
				t.Errorf("%d socket directories for 3 commands, want %d", len(socketDirs), wantDirs)
			}
			stop()
			for _, sb := range b.Started() {
				if _, err := os.Stat(b.dir(sb.ID())); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s's socket directory outlived the keeper: %v", sb.ID(), err)
				}
			}
		})
	}
}

// TestResultBoundsItsDecisions: a command's decisions (up to 1000, each
// with a name the sandbox chose) are cut to fit one frame, and the cut is
// counted; a result that fits is sent whole.
func TestResultBoundsItsDecisions(t *testing.T) {
	long := strings.Repeat("a", 4000) + ".example"
	for _, tc := range []struct {
		name    string
		n       int
		host    string
		wantCut bool
	}{
		{"fits", 1000, "short.example", false},
		{"too long", 1000, long, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := result{}
			for range tc.n {
				r.Network = append(r.Network, egress.Decision{Host: tc.host, Port: 443, Reason: "not on the network allow-list: " + tc.host})
			}
			got := r.Bounded()
			var buf bytes.Buffer
			if err := writeJSON(&buf, fResult, &got); err != nil {
				t.Fatalf("the bounded result does not fit a frame: %v", err)
			}
			if cut := got.NetworkDropped > 0; cut != tc.wantCut || len(got.Network)+got.NetworkDropped != tc.n {
				t.Errorf("%d kept, %d dropped of %d; want cut %v", len(got.Network), got.NetworkDropped, tc.n, tc.wantCut)
			}
		})
	}
}

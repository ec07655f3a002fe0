package warm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	kmsg "github.com/triage-sandbox/triage-sandbox/protocol/keeper"
)

// hostInProcess runs a keeper host of this test binary and environment in
// dir, on b, and returns a client backend that finds it (so it never
// starts a host process) and the host's end.
func hostInProcess(t *testing.T, dir string, b backends.Backend) (*Backend, <-chan struct{}) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hk, err := HostKey(exe, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := Host(ctx, HostOptions{Dir: dir, Key: hk, Log: io.Discard, Grace: 200 * time.Millisecond,
			Keeper: func(context.Context, *policy.Policy) (KeeperOptions, error) { return KeeperOptions{Backend: b}, nil }})
		if err != nil {
			t.Errorf("the host: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the host did not end")
		}
	})
	if !testenv.Eventually(10*time.Second, func() bool { return answers(hostPaths{dir, hk}.socket()) }) {
		t.Fatal("the host did not listen")
	}
	return &Backend{Backend: b, SelfExe: exe, Dir: dir}, done
}

func session(name string) *policy.Policy {
	return warmPolicy(policy.Warm{Session: name, Idle: time.Minute})
}

// TestHostHoldsTwoSessions: two sessions' keepers in one host (one pid,
// each its own record naming the host); one ends (its sandbox removed)
// while the other runs a command, which finishes; session end --all
// (EndAll) ends the other; the host, holding none, ends and removes its
// files.
func TestHostHoldsTwoSessions(t *testing.T) {
	dir := shortDir(t)
	running, release := make(chan struct{}), make(chan struct{})
	fb := backendtest.New()
	fb.NewSandbox = func(n int) *backendtest.Sandbox {
		sb := &backendtest.Sandbox{Name: "fake-" + string(rune('0'+n))}
		sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
			if cmd.Argv[0] == "block" {
				close(running)
				<-release
			}
			_, _ = io.WriteString(out.Stdout, cmd.Argv[0]+" in "+sb.Name)
			return backends.Result{Sandbox: sb.Name}, nil
		}
		return sb
	}
	wb, hostDone := hostInProcess(t, dir, fb)
	ctx := context.Background()
	one, err := wb.Start(ctx, session("one"), backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close(ctx)
	two, err := wb.Start(ctx, session("two"), backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	two.Close(ctx)
	recs, err := List(dir)
	if err != nil || len(recs) != 2 {
		t.Fatalf("two keepers' records, got %+v %v", recs, err)
	}
	for _, r := range recs {
		if r.PID != os.Getpid() || r.Host == "" || !r.Alive() {
			t.Fatalf("a hosted keeper's record names its host: %+v", r)
		}
	}
	var out bytes.Buffer
	ran := make(chan error, 1)
	go func() {
		_, err := one.Exec(ctx, backends.Command{Argv: []string{"block"}}, backends.Streams{Stdout: &out})
		ran <- err
	}()
	<-running
	began := time.Now()
	if ended, err := End(dir, session("two")); err != nil || !ended {
		t.Fatalf("ending session two: %v %v", ended, err)
	}
	// Its host lives on: End asks it, not waits for its pid to go.
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("ending a hosted session took %s", took)
	}
	if n := fb.Started()[1].Closes(); n != 1 {
		t.Fatalf("session two's sandbox closed %d times when it ended", n)
	}
	if fb.Started()[0].Closes() != 0 {
		t.Fatal("ending session two closed session one's sandbox")
	}
	close(release)
	if err := <-ran; err != nil || out.String() != "block in fake-1" {
		t.Fatalf("session one's command while two ended: %q %v", out.String(), err)
	}
	one.Close(ctx)
	ended, err := EndAll(dir)
	if err != nil || len(ended) != 1 || ended[0].Name != "one" {
		t.Fatalf("EndAll: %+v %v", ended, err)
	}
	closedAll(t, fb)
	select {
	case <-hostDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the host holding no keeper did not end after its grace")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	more, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	recsLeft, _ := filepath.Glob(filepath.Join(dir, hostPrefix+"*.rec"))
	if all := append(append(left, more...), recsLeft...); len(all) != 0 {
		t.Fatalf("left behind: %v", all)
	}
}

// TestHostSurvivesAKeepersPanic: a panic in one keeper (here in its
// sandbox's Exec) ends that keeper cleanly (its sandbox removed, its
// record gone), and the other keeper in the host runs on.
func TestHostSurvivesAKeepersPanic(t *testing.T) {
	dir := shortDir(t)
	fb := backendtest.New()
	fb.NewSandbox = func(n int) *backendtest.Sandbox {
		sb := &backendtest.Sandbox{Name: "fake-" + string(rune('0'+n))}
		sb.ExecFunc = func(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
			if cmd.Argv[0] == "panic" {
				panic("a keeper's fault")
			}
			return backends.Result{Sandbox: sb.Name}, nil
		}
		return sb
	}
	wb, _ := hostInProcess(t, dir, fb)
	ctx := context.Background()
	bad, err := wb.Start(ctx, session("bad"), backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close(ctx)
	good, err := wb.Start(ctx, session("good"), backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close(ctx)
	if _, err := bad.Exec(ctx, backends.Command{Argv: []string{"panic"}}, backends.Streams{}); err == nil {
		t.Fatal("the panicking command reported no failure")
	}
	if !testenv.Eventually(10*time.Second, func() bool { return fb.Started()[0].Closes() == 1 }) {
		t.Fatal("the panicking keeper's sandbox was not removed")
	}
	if recs, _ := List(dir); len(recs) != 1 || recs[0].Name != "good" {
		t.Fatalf("only the good keeper's record stays: %+v", recs)
	}
	if _, err := good.Exec(ctx, backends.Command{Argv: []string{"true"}}, backends.Streams{}); err != nil {
		t.Fatalf("the other keeper after a panic: %v", err)
	}
}

// TestHostTellsAClientToRetryWhenEnding: a request that reaches a host
// already ending is told to retry (the client then starts another host),
// never hosted by a host about to exit.
func TestHostTellsAClientToRetryWhenEnding(t *testing.T) {
	h := &host{o: HostOptions{Dir: shortDir(t)}, keepers: map[string]*hosted{}, closing: true, ctx: context.Background()}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	if r := h.keepOne(c1, session("late")); !r.Retry {
		t.Fatalf("an ending host's reply: %+v", r)
	}
	if len(h.keepers) != 0 {
		t.Fatal("an ending host took a keeper")
	}
}

// TestPeerOfAnotherUserRefused: the host answers only its own uid.
func TestPeerOfAnotherUserRefused(t *testing.T) {
	uid := os.Getuid()
	for _, tc := range []struct {
		name string
		peer int
		ok   bool
	}{
		{"same uid", uid, true},
		{"another uid", uid + 1, false},
		{"root for a user", 0, uid == 0},
		{"unknown", -1, false},
	} {
		if err := samePeer(tc.peer, uid); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// The credentials as the kernel gives them, on a real connection.
	dir := shortDir(t)
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("unix", filepath.Join(dir, "s")); err == nil {
			defer c.Close()
			_, _ = c.Read(make([]byte, 1))
		}
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := checkPeer(conn, uid); err != nil {
		t.Fatalf("this user's own connection: %v", err)
	}
	if err := checkPeer(conn, uid+1); err == nil || !strings.Contains(err.Error(), "uid") {
		t.Fatalf("a connection of another uid than the host's was not refused: %v", err)
	}
}

// hostFrame is a request frame as a client sends it.
func hostFrame(t byte, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	b[0] = t
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

func TestReadHostRequest(t *testing.T) {
	keep, err := kmsg.Encode(&kmsg.HostRequest{Op: kmsg.HostKeep, Policy: session("s")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string // "" when it reads
	}{
		{"keep", hostFrame(fHost, keep), ""},
		{"end", hostFrame(fHost, []byte(`{"protocol":3,"op":"end","key":"0123456789abcdef"}`)), ""},
		{"end of a path", hostFrame(fHost, []byte(`{"protocol":3,"op":"end","key":"../../etc/x"}`)), "16 hex"},
		{"end with a policy", hostFrame(fHost, []byte(`{"protocol":3,"op":"end","key":"0123456789abcdef","policy":{}}`)), "no policy"},
		{"keep without a policy", hostFrame(fHost, []byte(`{"protocol":3,"op":"keep"}`)), "a policy"},
		{"unknown op", hostFrame(fHost, []byte(`{"protocol":3,"op":"exec"}`)), "op"},
		{"unknown field", hostFrame(fHost, []byte(`{"protocol":3,"op":"end","key":"0123456789abcdef","x":1}`)), "unknown field"},
		{"trailing data", hostFrame(fHost, []byte(`{"protocol":3,"op":"end","key":"0123456789abcdef"} {}`)), "after"},
		{"another version", hostFrame(fHost, []byte(`{"protocol":99,"op":"end","key":"0123456789abcdef"}`)), "protocol 99"},
		{"another frame", hostFrame(fHello, keep), "frame type"},
		{"over the bound", hostFrame(fHost, nil)[:1], "reading"},
	} {
		_, err := readHostRequest(bytes.NewReader(tc.in))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	huge := []byte{fHost, 0xff, 0xff, 0xff, 0xff}
	if _, err := readHostRequest(bytes.NewReader(huge)); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Errorf("a 4 GiB length: %v", err)
	}
}

// FuzzReadHostRequest: whatever a client sends, the host reads a request
// that holds its rules, or an error; never a panic.
func FuzzReadHostRequest(f *testing.F) {
	keep, _ := kmsg.Encode(&kmsg.HostRequest{Op: kmsg.HostKeep, Policy: session("s")})
	for _, seed := range [][]byte{
		hostFrame(fHost, keep),
		hostFrame(fHost, []byte(`{"protocol":3,"op":"end","key":"0123456789abcdef"}`)),
		hostFrame(fHost, []byte(`{"protocol":3,"op":"end","key":"0123456789abcdeF"}`)),
		hostFrame(fHost, []byte(`{"protocol":3,"op":"keep","policy":null}`)),
		hostFrame(fHost, []byte(`{"protocol":3,"op":"keep","policy":{"warm":{"session":"x"}}}`)),
		hostFrame(fHost, []byte(`null`)),
		{fHost, 0, 0, 0, 9, '{'},
		{fHost, 0xff, 0xff, 0xff, 0xff},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := readHostRequest(bytes.NewReader(b))
		if err != nil {
			return
		}
		switch r.Op {
		case kmsg.HostKeep:
			if r.Policy == nil || r.Key != "" || r.Policy.Warm.Session == "" && r.Policy.Warm.Pool == 0 {
				t.Fatalf("a keep read without its policy: %+v", r)
			}
		case kmsg.HostEnd:
			if r.Policy != nil || !kmsg.ValidKey(r.Key) {
				t.Fatalf("an end read without a key: %+v", r)
			}
		default:
			t.Fatalf("op %q read", r.Op)
		}
	})
}

// TestSweepHostsRemovesOnlyDeadHosts: a killed host's socket, record and
// log go; a live one's stay.
func TestSweepHostsRemovesOnlyDeadHosts(t *testing.T) {
	dir := shortDir(t)
	write := func(k string, rec kmsg.HostRecord) hostPaths {
		hp := hostPaths{dir, k}
		b, err := kmsg.Encode(&rec)
		if err != nil {
			t.Fatal(err)
		}
		for path, data := range map[string][]byte{hp.record(): b, hp.socket(): nil, hp.log(): nil} {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return hp
	}
	live := write("0123456789abcdef", kmsg.HostRecord{PID: os.Getpid(), Start: startOf(t, os.Getpid()), Since: time.Now()})
	dead := write("fedcba9876543210", kmsg.HostRecord{PID: os.Getpid(), Start: startOf(t, os.Getpid()) + "0", Since: time.Now()})
	if _, err := Sweep(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{live.socket(), live.record(), live.log()} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("a live host's %s went: %v", filepath.Base(f), err)
		}
	}
	for _, f := range []string{dead.socket(), dead.record(), dead.log()} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a dead host's %s stayed: %v", filepath.Base(f), err)
		}
	}
}

// TestKeeperLogAfterItsEnd: a hosted keeper's line after its clean end
// removed its log (a pool's filling cancelled while its sandboxes go) is
// dropped, never a log file made again for the sweep to find.
func TestKeeperLogAfterItsEnd(t *testing.T) {
	dir := t.TempDir()
	l := &appendLog{path: filepath.Join(dir, "k.log")}
	if _, err := io.WriteString(l, "late\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a late line made the removed log again: %v", err)
	}
	if err := os.WriteFile(l.path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"one\n", "two\n"} {
		if _, err := io.WriteString(l, line); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(l.path); string(b) != "one\ntwo\n" {
		t.Fatalf("the log holds %q", b)
	}
}

// blockingSweep is a fake backend whose Sweep waits for release, and
// counts its calls.
type blockingSweep struct {
	*backendtest.Backend
	release chan struct{}
	calls   atomic.Int32
}

func (b *blockingSweep) Sweep(ctx context.Context) ([]string, error) {
	b.calls.Add(1)
	<-b.release
	return nil, nil
}

// TestHostSweepsOnceAtATime: a host's keepers share one sweep at a time:
// a keeper that starts while another's sweep is under way starts none of
// its own (that sweep covers every dead owner), so a thousand starts do
// not queue a thousand sweeps of the daemon.
func TestHostSweepsOnceAtATime(t *testing.T) {
	dir := shortDir(t)
	fb := &blockingSweep{Backend: backendtest.New(), release: make(chan struct{})}
	wb, _ := hostInProcess(t, dir, fb)
	ctx := context.Background()
	for _, name := range []string{"one", "two", "three"} {
		sb, err := wb.Start(ctx, session(name), backends.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sb.Close(ctx)
	}
	if n := fb.calls.Load(); n != 1 {
		t.Fatalf("three keepers started during one sweep ran %d sweeps", n)
	}
	close(fb.release)
	if _, err := EndAll(dir); err != nil {
		t.Fatal(err)
	}
}

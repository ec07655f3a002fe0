package warm

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

func TestFramesRoundTripAndBound(t *testing.T) {
	var buf bytes.Buffer
	if err := writeFrame(&buf, fStdout, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&buf, fRequest, &request{Argv: []string{"true"}, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	typ, b, err := readFrame(&buf)
	if err != nil || typ != fStdout || string(b) != "hello" {
		t.Fatalf("first frame: %d %q %v", typ, b, err)
	}
	typ, b, err = readFrame(&buf)
	if err != nil || typ != fRequest || !strings.Contains(string(b), `"argv":["true"]`) {
		t.Fatalf("second frame: %d %q %v", typ, b, err)
	}
	if err := writeFrame(&buf, fStdout, make([]byte, maxFrame+1)); err == nil {
		t.Fatal("a frame over the bound was written")
	}
	// A length over the bound from the other side is refused before any
	// allocation.
	if _, _, err := readFrame(bytes.NewReader([]byte{fStdout, 0xff, 0xff, 0xff, 0xff})); err == nil {
		t.Fatal("a frame over the bound was read")
	}
	// frameWriter splits what is written into bounded frames.
	var sent [][]byte
	w := frameWriter{send: func(_ byte, b []byte) error { sent = append(sent, b); return nil }, t: fStdout}
	if n, err := w.Write(make([]byte, 2*maxFrame+3)); err != nil || n != 2*maxFrame+3 || len(sent) != 3 {
		t.Fatalf("frameWriter: %d %v, %d frames", n, err, len(sent))
	}
}

func TestKeysSeparateSessionsAndPools(t *testing.T) {
	base := policy.Policy{Role: "agent", WorkspaceRoot: "/w", Backend: "oci", Base: policy.Base{Image: "i"}}
	a, b, c := base, base, base
	a.Warm = policy.Warm{Session: "one"}
	b.Warm = policy.Warm{Session: "two"}
	c.Warm = policy.Warm{Pool: 2}
	other := a
	other.WorkspaceRoot = "/other"
	keys := map[string]bool{}
	for _, p := range []*policy.Policy{&a, &b, &c, &other} {
		keys[key(p)] = true
	}
	if len(keys) != 4 {
		t.Fatalf("sessions, pools and workspaces share keys: %v", keys)
	}
	// A session's key does not change with its policy: a changed policy
	// reaches the same keeper, which then ends.
	changed := a
	changed.Limits.Pids = 7
	if key(&changed) != key(&a) {
		t.Fatal("a session's key changed with its policy")
	}
	// A pool's does: each policy has its own pool.
	pool2 := c
	pool2.Limits.Pids = 7
	if key(&pool2) == key(&c) {
		t.Fatal("two policies share a pool")
	}
}

func TestSweepRemovesOnlyDeadKeepers(t *testing.T) {
	dir := t.TempDir()
	live := paths{dir, "live"}
	dead := paths{dir, "dead"}
	if err := writeRecord(live.record(), Record{Kind: KindSession, Name: "a", PID: os.Getpid(), Start: startOf(t, os.Getpid())}); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(dead.record(), Record{Kind: KindPool, PID: 1 << 30, Start: "1"}); err != nil {
		t.Fatal(err)
	}
	deadFront, liveFront := fastpath.FrontSocket(dir, dead.k), fastpath.FrontSocket(dir, live.k)
	for _, f := range []string{live.socket(), liveFront, dead.socket(), deadFront, dead.log(), dead.lock()} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Sweep(dir)
	if err != nil || len(removed) != 1 {
		t.Fatalf("Sweep: %v %v", removed, err)
	}
	for _, f := range []string{dead.record(), dead.socket(), deadFront, dead.log(), dead.lock()} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s is still there", filepath.Base(f))
		}
	}
	for _, f := range []string{live.record(), live.socket(), liveFront} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s of a live keeper was removed", filepath.Base(f))
		}
	}
	recs, err := List(dir)
	if err != nil || len(recs) != 1 || recs[0].Name != "a" || !recs[0].Alive() {
		t.Fatalf("List: %+v %v", recs, err)
	}
}

func startOf(t *testing.T, pid int) string {
	t.Helper()
	s := ownership.ProcessStart(pid)
	if s == "" {
		t.Skip("no process start times here")
	}
	return s
}

// TestSweepRemovesStaleRoutes: a front's route to a keeper with no
// record goes once it is a minute old; a fresh one, and one to a live
// keeper, stay.
func TestSweepRemovesStaleRoutes(t *testing.T) {
	dir := t.TempDir()
	live := paths{dir, "0123456789abcdef"}
	if err := writeRecord(live.record(), Record{Kind: KindSession, Name: "a", PID: os.Getpid(), Start: startOf(t, os.Getpid())}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	routes := map[string]struct {
		key  string
		old  bool
		stay bool
	}{
		"route-live": {live.k, true, true},
		"route-gone": {"fedcba9876543210", true, false},
		"route-new":  {"fedcba9876543210", false, true},
	}
	for name, r := range routes {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(r.key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if r.old {
			if err := os.Chtimes(f, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := Sweep(dir); err != nil {
		t.Fatal(err)
	}
	for name, r := range routes {
		_, err := os.Stat(filepath.Join(dir, name))
		if stays := err == nil; stays != r.stay {
			t.Errorf("%s: still there %v, want %v", name, stays, r.stay)
		}
	}
}

// TestMineTellsPoolsApart: a pool's keeper keeps exactly the runs of its
// own policy: no session's, no other pool size's, no other policy's, no
// other role's; a session's keeper no pool's.
func TestMineTellsPoolsApart(t *testing.T) {
	base := policy.Policy{Role: "agent", WorkspaceRoot: "/w", Backend: "local", Base: policy.Base{Image: "i"}}
	pool := base
	pool.Warm = policy.Warm{Pool: 2}
	session := base
	session.Warm = policy.Warm{Session: "s"}
	bigger, other, repro := pool, pool, pool
	bigger.Warm.Pool = 3
	other.Limits.Pids = 7
	repro.Role = "reproducer"
	same := pool
	for _, tt := range []struct {
		name   string
		keeper policy.Policy
		run    policy.Policy
		want   bool
	}{
		{"the pool's own policy", pool, same, true},
		{"a session's run", pool, session, false},
		{"a run with no pool", pool, base, false},
		{"another pool size", pool, bigger, false},
		{"another policy", pool, other, false},
		{"another role", pool, repro, false},
		{"a pool's run at a session", session, pool, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Mine(&tt.keeper, &tt.run); got != tt.want {
				t.Fatalf("Mine = %v, want %v", got, tt.want)
			}
			// With the run's warm hash given (a kept compile's), the
			// same verdict; a given hash that is not the keeper's is
			// refused.
			mine := keepingHashed(&tt.keeper)
			if got := mine(&tt.run, tt.run.WarmHash()); got != tt.want {
				t.Fatalf("mine with the run's warm hash = %v, want %v", got, tt.want)
			}
			if mine(&tt.run, "sha256:other") {
				t.Fatal("mine with another warm hash: true")
			}
		})
	}
}

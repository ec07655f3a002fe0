package warm

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

func TestRecordIdleAt(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name               string
		in                 Record
		wantName, wantIdle string
		wantSetting        string
	}{
		{"unused since start", Record{Kind: KindSession, Name: "s1", Since: now.Add(-90 * time.Second), WarmIdle: "10m0s"},
			"s1", "1m30s", "10m0s"},
		{"last used", Record{Kind: KindSession, Name: "s1", Since: now.Add(-time.Hour), LastUsed: now.Add(-5 * time.Second), WarmIdle: "10m0s"},
			"s1", "5s", "10m0s"},
		{"busy is not idle", Record{Kind: KindPool, Role: "reproducer", Since: now.Add(-time.Hour), LastUsed: now.Add(-time.Minute), Busy: 1, WarmIdle: "10m0s"},
			"pool:reproducer", "0s", "10m0s"},
		{"a clock step back", Record{Kind: KindSession, Name: "s", Since: now.Add(time.Minute)}, "s", "0s", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.in
			r.IdleAt(now)
			if r.Name != tc.wantName || r.Idle != tc.wantIdle || r.WarmIdle != tc.wantSetting {
				t.Fatalf("name %q idle %q warm_idle %q, want %q %q %q", r.Name, r.Idle, r.WarmIdle, tc.wantName, tc.wantIdle, tc.wantSetting)
			}
		})
	}
}

func TestNamedFindsLivePoolsOfTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	me := Record{Kind: KindPool, Name: PoolName("reproducer"), Role: "reproducer", Workspace: "/w", PID: os.Getpid(), Start: startOf(t, os.Getpid())}
	other := me
	other.Workspace = "/x"
	dead := me
	dead.PID, dead.Start = 1<<30, "1"
	oci := me
	oci.Backend = "oci"
	for name, r := range map[string]Record{"a": me, "b": other, "c": dead, "d": oci} {
		if err := writeRecord(paths{dir, name}.record(), r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Named(dir, "pool:reproducer", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "d" {
		t.Fatalf("Named: %+v", got)
	}
	if got, _ := Named(dir, "pool:agent", "/w"); len(got) != 0 {
		t.Fatalf("another role's name matched: %+v", got)
	}
}

// TestEndKeeperSignalsTheRecordedProcess: the process the record names
// ends; a record whose process start differs (a reused pid) is left alone.
func TestEndKeeperSignalsTheRecordedProcess(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep here:", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	start := startOf(t, cmd.Process.Pid)
	dir := t.TempDir()
	if err := EndKeeper(dir, Record{Kind: KindPool, PID: cmd.Process.Pid, Start: start + "0"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Fatal("a record with another start time ended the process")
	case <-time.After(50 * time.Millisecond):
	}
	// A hosted keeper's pid is its host's, shared with other keepers: it
	// is ended through the host (gone here), never by a signal.
	if err := EndKeeper(dir, Record{ID: "0123456789abcdef", Kind: KindPool, PID: cmd.Process.Pid, Start: start, Host: "fedcba9876543210"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Fatal("a hosted keeper's record signalled its host's process")
	case <-time.After(50 * time.Millisecond):
	}
	if err := EndKeeper(dir, Record{Kind: KindPool, PID: cmd.Process.Pid, Start: start}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the keeper's process still runs")
	}
}

// TestKeeperRecordNamesThePoolAndTracksUse: a running pool keeper's
// record has the pool's name and setting, is busy while a run is
// attached and idle from when it detached.
func TestKeeperRecordNamesThePoolAndTracksUse(t *testing.T) {
	dir := shortDir(t)
	p := warmPolicy(policy.Warm{Pool: 1, Idle: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Keep(ctx, KeeperOptions{Dir: dir, Policy: p, Backend: backendtest.New(), Log: io.Discard})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	pp := paths{dir, key(p)}
	waitRecord := func(what string, ok func(Record) bool) Record {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			recs, _ := List(dir)
			if len(recs) == 1 && ok(recs[0]) {
				return recs[0]
			}
		}
		recs, _ := List(dir)
		t.Fatalf("no record %s: %+v", what, recs)
		return Record{}
	}
	r := waitRecord("of the pool", func(r Record) bool { return true })
	if r.Name != "pool:agent" || r.WarmIdle != "1h0m0s" || r.ID != pp.k || r.Kind != KindPool {
		t.Fatalf("record %+v", r)
	}
	conn, _, err := dial(pp)
	if err != nil {
		t.Fatal(err)
	}
	waitRecord("busy", func(r Record) bool { return r.Busy == 1 })
	conn.Close()
	waitRecord("idle again", func(r Record) bool { return r.Busy == 0 && r.LastUsed.After(r.Since) })
}

package warm

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestKeeperOfAnotherVersion: a keeper of another build (one that outlived
// an upgrade) holds the session's socket. Start reads its hello, fails with
// one line that says what to do, and neither replaces it nor spawns
// another; its record (of the other version) is listed, by what ends it,
// and a sweep leaves it while it lives.
func TestKeeperOfAnotherVersion(t *testing.T) {
	dir := shortDir(t)
	p := warmPolicy(policy.Warm{Session: "s", Idle: time.Hour})
	pp := paths{dir, key(p)}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", pp.socket())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// A build before versions: the hello has no "protocol".
			_ = writeFrame(c, fHello, []byte(fmt.Sprintf(`{"id":"c1","scratch":{"home":"/h","tmp":"/t"},"policy_hash":%q}`, p.WarmHash())))
			c.Close()
		}
	}()
	old := fmt.Sprintf(`{"kind":"session","name":"s","workspace":"/w","pid":%d,"start":%q,"idle":"1h0m0s"}`, os.Getpid(), startOf(t, os.Getpid()))
	if err := os.WriteFile(pp.record(), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Backend{Backend: backendtest.New(), SelfExe: "/nonexistent/triage-sandbox", Dir: dir}
	_, err = b.Start(context.Background(), p, backends.StartOptions{})
	want := "the keeper at " + pp.socket() + " speaks protocol 0, this triage-sandbox speaks " + fmt.Sprint(protocol.Version) + ": rebuild both"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Start: %v, want one line containing %q", err, want)
	}
	if _, err := os.Stat(pp.socket()); err != nil {
		t.Fatalf("the other keeper's socket was taken: %v", err)
	}
	recs, err := Named(dir, "s", "/w")
	if err != nil || len(recs) != 1 || recs[0].Protocol != 0 || recs[0].PID != os.Getpid() {
		t.Fatalf("Named: %+v %v, want the other version's keeper", recs, err)
	}
	if removed, err := Sweep(dir); err != nil || len(removed) != 0 {
		t.Fatalf("Sweep took a live keeper's files: %v %v", removed, err)
	}
}

package warm

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestEarlyIsTakenOnlyByItsSessionsPolicy: a connection dialled before
// the policy is built serves Start only when it reached the keeper that
// policy names, in the keepers' directory Start uses, and that keeper's
// sandbox runs exactly that policy; once at most.
func TestEarlyIsTakenOnlyByItsSessionsPolicy(t *testing.T) {
	dir := shortDir(t)
	p := warmPolicy(policy.Warm{Session: "s", Idle: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Keep(ctx, KeeperOptions{Dir: dir, Policy: p, Backend: backendtest.New(), Log: io.Discard})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	pp := paths{dir, key(p)}
	if !testenv.Eventually(10*time.Second, func() bool { _, err := os.Stat(pp.record()); return err == nil }) {
		t.Fatal("the keeper did not start")
	}
	changed := *p
	changed.Limits.Memory++ // the config changed: another hash
	other := *p
	other.Warm.Session = "t"
	tests := []struct {
		name    string
		dialDir string
		session string
		takeDir string
		p       *policy.Policy
		want    bool
	}{
		{"its session and policy", dir, "s", dir, p, true},
		{"the policy changed", dir, "s", dir, &changed, false},
		{"another session", dir, "s", dir, &other, false},
		{"no keeper there", dir, "u", dir, p, false},
		{"another directory", dir, "s", shortDir(t), p, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := DialEarly(tc.dialDir, p.WorkspaceRoot, profiles.Role(p.Role), tc.session)
			conn, h, ok := e.take(context.Background(), tc.takeDir, tc.p)
			if ok != tc.want {
				t.Fatalf("taken: %v, want %v", ok, tc.want)
			}
			if ok {
				defer conn.Close()
				if h.PolicyHash != p.WarmHash() {
					t.Errorf("hello's policy %s, want %s", h.PolicyHash, p.WarmHash())
				}
			}
			if _, _, again := e.take(context.Background(), tc.takeDir, tc.p); again {
				t.Error("an early connection was taken twice")
			}
		})
	}
}

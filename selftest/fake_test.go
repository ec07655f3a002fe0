package selftest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestBackendThatRunsNothingNeverPasses: a backend whose sandboxes run no
// command (the fake) cannot pass the gate, its probe checks are never ok,
// and the selftest closes every sandbox it started.
func TestBackendThatRunsNothingNeverPasses(t *testing.T) {
	testenv.SkipShort(t, "builds the triage-sandbox binary for the host-side controls and runs every phase")
	// Short: the canaries include sockets, whose paths are at most 108 bytes.
	base, err := os.MkdirTemp("", "ts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	b := backendtest.New()
	rep := Run(context.Background(), Options{Config: config.Default(t.TempDir()), Roles: []profiles.Role{profiles.RoleAgent}, Backend: b,
		SelfHost: testenv.Binary(t), CanaryBase: base})
	if rep.Passed() {
		t.Fatal("the selftest passed on a backend that runs nothing")
	}
	rr := rep.Roles[0]
	if rr.Error != "" {
		t.Fatalf("the role did not run: %s", rr.Error)
	}
	for _, r := range rr.Results {
		probed := strings.HasPrefix(r.ID, "FS-") || strings.HasPrefix(r.ID, "NET-")
		if probed && r.OK {
			t.Errorf("%s is ok with no probe run: %+v", r.ID, r)
		}
		if r.ID == "C-10" && r.Status != StatusFail {
			t.Errorf("the exit-status control did not fail: %+v", r)
		}
	}
	if b.Starts() == 0 {
		t.Fatal("no sandbox was started")
	}
	if open := b.Open(); len(open) != 0 {
		t.Errorf("%d of %d sandboxes were left open", len(open), len(b.Started()))
	}
}

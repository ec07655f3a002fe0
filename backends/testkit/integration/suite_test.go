//go:build linux

package integration_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestSuite runs backendtest.Suite, the lifecycle every backend keeps, on
// each Linux backend that can run here (and oci under gVisor), made as
// the CLI's registry makes it, with a reproducer's policy of a fixture
// workspace.
func TestSuite(t *testing.T) {
	forEachBackendAnd(t, []string{gvisor, dockerGVisor}, func(t *testing.T, k *kit) {
		backendtest.Suite(t, k.harness)
	})
}

// harness is the kit as backendtest.Suite runs it.
func (k *kit) harness(t testing.TB) backendtest.Harness {
	return backendtest.Harness{
		Backend: k.b,
		Policy: func(t testing.TB) *policy.Policy {
			f := newFixture(t)
			// The reproducer's outputs directory, there before the policy
			// is built, as a workspace has it.
			if err := os.MkdirAll(filepath.Join(f.root, "repros"), 0o755); err != nil {
				t.Fatal(err)
			}
			return k.build(t, f, profiles.RoleReproducer, currentHost(t))
		},
		Track: func(testing.TB) func(backends.Sandbox) func() []string {
			w := k.watch()
			return func(sb backends.Sandbox) func() []string {
				w.started()
				return func() []string { return k.left(sb.ID(), w) }
			}
		},
	}
}

package staging

import (
	"testing"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// TestStagesInAgreesWithStagePaths: the keeper asks the policy whether a
// pooled sandbox needs a copy in (Policy.StagesIn) where backends use
// StagePaths; the two must agree.
func TestStagesInAgreesWithStagePaths(t *testing.T) {
	staged := policy.Staging{Size: 1 << 20, Inodes: 100}
	for _, tc := range []struct {
		name string
		p    *policy.Policy
	}{
		{"not staged", &policy.Policy{Mounts: []policy.Mount{{Path: "/w"}}}},
		{"staged, read-only mounts only", &policy.Policy{Staging: staged, Mounts: []policy.Mount{{Path: "/r", ReadOnly: true}}}},
		{"staged writable dir", &policy.Policy{Staging: staged, Mounts: []policy.Mount{{Path: "/w"}}}},
		{"staged link only", &policy.Policy{Staging: policy.Staging{Size: 1, Links: []string{"/w/l"}}}},
	} {
		in, _ := StagePaths(tc.p)
		if got, want := tc.p.StagesIn(), len(in) > 0; got != want {
			t.Errorf("%s: StagesIn() = %v, StagePaths gives %d paths in", tc.name, got, len(in))
		}
	}
}

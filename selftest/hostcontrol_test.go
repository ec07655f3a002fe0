package selftest

import (
	"testing"

	"github.com/triage-sandbox/triage-sandbox/probe"
)

// TestHostStep: only the fill that keeps what fits for the copy back
// changes on the host (it stops at the proof); every other step, and the
// sandbox's own, is as the check wrote it.
func TestHostStep(t *testing.T) {
	keep := step("RES-07", "fill", map[string]string{"files": "33024", "proof": "100", "keep_unbounded": "true"}, "/w")
	tests := []struct {
		name     string
		in       probe.Step
		wantKeep string
	}{
		{"inode fill", keep, ""},
		{"byte fill", step("RES-06", "fill", map[string]string{"bytes": "1"}, "/w"), ""},
		{"other op", step("X", "exists", map[string]string{"keep_unbounded": "true"}), "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hostStep(tt.in)
			if got.Args["keep_unbounded"] != tt.wantKeep {
				t.Errorf("keep_unbounded = %q, want %q", got.Args["keep_unbounded"], tt.wantKeep)
			}
		})
	}
	if keep.Args["keep_unbounded"] != "true" {
		t.Error("hostStep changed the sandbox's step")
	}
	checks := Catalogue()
	e := stepEnv()
	for _, ch := range checks {
		if ch.ID == "RES-07" {
			for _, s := range ch.Steps(e) {
				if s.Args["keep_unbounded"] != "true" || s.Args["proof"] == "" {
					t.Errorf("RES-07's sandbox step must fill for real and the control have a proof: %+v", s.Args)
				}
			}
		}
	}
}

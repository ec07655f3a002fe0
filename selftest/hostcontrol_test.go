package selftest

import (
	"testing"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
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

// TestControlOnHostJudged: an allowed check with a control on the host
// (C-11, the name localhost) fails where the host can do it and the
// sandbox cannot; where the host cannot either, the sandbox is not to
// blame: inconclusive, never ok.
func TestControlOnHostJudged(t *testing.T) {
	ch := find(t, "C-11")
	if !ch.HasControl() || ch.Phase != PhaseMain {
		t.Fatalf("C-11 has no control on the host in the main phase: %+v", ch)
	}
	e := stepEnv()
	ok := &Evidence{Obs: map[string]probe.Observation{"C-11": {OK: true, Detail: "served"}}}
	failed := &Evidence{Obs: map[string]probe.Observation{"C-11": {Errno: "EAI_AGAIN", Detail: "listen on localhost:0"}}}
	hostCan, hostCannot := judgeControl(e, ch, ok, nil), judgeControl(e, ch, failed, nil)
	for _, tc := range []struct {
		name    string
		inside  *Evidence
		control *controlResult
		want    string
	}{
		{"both can", ok, hostCan, StatusOK},
		{"the sandbox cannot", failed, hostCan, StatusFail},
		{"neither can", failed, hostCannot, StatusInconclusive},
		{"the sandbox can, the host not", ok, hostCannot, StatusOK},
	} {
		r := judge(e, ch, tc.inside, nil, tc.control)
		if r.Status != tc.want || r.OK != (tc.want == StatusOK) || r.Control == "" {
			t.Errorf("%s: %+v, want %s with the control's evidence", tc.name, r, tc.want)
		}
	}
}

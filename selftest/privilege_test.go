package selftest

import (
	"testing"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// PRIV-05 where mountinfo cannot show nodev (gVisor): the planted device
// node decides; without one the check is inconclusive, never ok.
func TestSuidMountsVerdict(t *testing.T) {
	ch := suidMountsCheck()
	control := &controlResult{saw: true}
	tests := []struct {
		name   string
		values map[string]string
		want   string
	}{
		{"nodev shown", map[string]string{"found": "false", "nodev": "shown"}, StatusOK},
		{"device refused", map[string]string{"found": "false", "nodev": "refused"}, StatusOK},
		{"cannot tell", map[string]string{"found": "false", "nodev": "unknown"}, StatusInconclusive},
		{"set-id honoured", map[string]string{"found": "true", "nodev": "unknown"}, StatusFail},
		{"device opened", map[string]string{"found": "true", "nodev": "shown"}, StatusFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Evidence{Obs: map[string]probe.Observation{"PRIV-05": {OK: true, Values: tt.values}}}
			if r := judge(&Env{P: &policy.Policy{}}, ch, ev, nil, control); r.Status != tt.want {
				t.Errorf("status %s, want %s (%s)", r.Status, tt.want, r.Evidence)
			}
		})
	}
}

package backends_test

import (
	"context"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

type prober struct{ backends.Backend }

func (prober) NetTargets(context.Context, *policy.Policy) (backends.NetProbe, error) { return nil, nil }

type wrapper struct{ backends.Backend }

func (w wrapper) Unwrap() backends.Backend { return w.Backend }

// TestNetProberOf: a NetProber is found itself and through wrappers (a
// keeper's wrapper must not hide it: the cluster network checks would be
// dropped), and none where none is wrapped.
func TestNetProberOf(t *testing.T) {
	tests := []struct {
		name string
		b    backends.Backend
		want bool
	}{
		{"itself", prober{}, true},
		{"wrapped", wrapper{prober{}}, true},
		{"wrapped twice", wrapper{wrapper{prober{}}}, true},
		{"no prober", wrapper{wrapper{}}, false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		if _, ok := backends.NetProberOf(tc.b); ok != tc.want {
			t.Errorf("%s: found %v, want %v", tc.name, ok, tc.want)
		}
	}
}

package oci

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// A pipelined start (one that did not wait for the holder's ready line)
// is still held to its bound: a holder not ready within it is killed and
// its command told why; one that said it is ready, or that ended (its end
// is told otherwise), is left alone.
func TestBoundStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ready  bool
		gone   bool
		killed bool
	}{
		{name: "never ready", killed: true},
		{name: "ready", ready: true},
		{name: "ended", gone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The runtime's kill is a harmless true here: what is judged is
			// that it was asked for.
			s := &sandbox{b: &Backend{stateDir: t.TempDir()}, runtime: "/bin/true",
				Base: holder.New(&policy.Policy{}, holder.Config{Setup: 50 * time.Millisecond})}
			if tc.ready {
				_ = protocol.WriteStatus(&s.Out, protocol.Status{State: protocol.StateReady})
			}
			if tc.gone {
				close(s.Gone)
			}
			s.boundStart(context.Background(), 50*time.Millisecond)
			if got := s.killed.Load(); got != tc.killed {
				t.Errorf("killed: %v, want %v", got, tc.killed)
			}
			err := s.startFailure()
			if tc.killed != (err != nil) || (err != nil && (!strings.Contains(err.Error(), "did not start within 50ms") || !strings.Contains(err.Error(), "the command did not run"))) {
				t.Errorf("told: %v", err)
			}
		})
	}
}

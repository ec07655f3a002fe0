package selftest

import (
	"context"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// TestEndedAsPlanned: only a command that exited with its plan's status
// and met nothing else leaves its sandbox to the chain's next phase.
func TestEndedAsPlanned(t *testing.T) {
	planned := sandbox.Outcome{Result: backends.Result{ExitCode: statusExitCode}}
	tests := []struct {
		name   string
		change func(*sandbox.Outcome)
		want   bool
	}{
		{"as planned", func(*sandbox.Outcome) {}, true},
		{"another exit status", func(o *sandbox.Outcome) { o.ExitCode = 0 }, false},
		{"killed by a signal", func(o *sandbox.Outcome) { o.ExitCode, o.Signal = 137, 9 }, false},
		{"signal with the plan's status", func(o *sandbox.Outcome) { o.Signal = 9 }, false},
		{"timed out", func(o *sandbox.Outcome) { o.TimedOut = true }, false},
		{"canceled", func(o *sandbox.Outcome) { o.Canceled = true }, false},
		{"OOM kill", func(o *sandbox.Outcome) { o.OOMKilled = true }, false},
		{"the whole sandbox OOM", func(o *sandbox.Outcome) { o.WholeSandboxOOM = true }, false},
		{"copy back failed", func(o *sandbox.Outcome) { o.CopyBackError = "past its bound" }, false},
		{"output ceiling", func(o *sandbox.Outcome) { o.OutputCeiling = true }, false},
		{"a conflict", func(o *sandbox.Outcome) { o.Conflicts = []stage.Change{{Path: "/w/x"}} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := planned
			tt.change(&o)
			if got := endedAsPlanned(o); got != tt.want {
				t.Errorf("endedAsPlanned = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPhaseSandboxReplacedWhenUnfit: the chain's next phase takes the
// sandbox over only when the command before left it fit; an unfit one is
// closed before a fresh one starts, and nothing is left open at the end.
func TestPhaseSandboxReplacedWhenUnfit(t *testing.T) {
	ctx := context.Background()
	b := backendtest.New()
	started := 0
	ps := &phaseSandbox{o: Options{Backend: b}, e: &Env{P: &policy.Policy{}}, clock: &phaseClock{took: map[string]time.Duration{}},
		started: func() { started++ }}
	first, err := ps.session(ctx, "processes", "t1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ps.fit = true
	again, err := ps.session(ctx, "fill", "t2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || b.Starts() != 1 {
		t.Fatalf("a fit sandbox was not taken over: %d starts", b.Starts())
	}
	ps.fit = false
	fresh, err := ps.session(ctx, "memory", "t3", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == first || b.Starts() != 2 {
		t.Fatalf("an unfit sandbox was taken over: %d starts", b.Starts())
	}
	if open := b.Open(); len(open) != 1 {
		t.Fatalf("the unfit sandbox was not closed before the fresh one: %d open", len(open))
	}
	ps.close(ctx)
	if open := b.Open(); len(open) != 0 {
		t.Errorf("%d sandboxes left open", len(open))
	}
	if started != 1 {
		t.Errorf("started called %d times, want once (after the first Start)", started)
	}
}

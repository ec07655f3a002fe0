package launch

import (
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestAsRoot: the sandbox identity lands in each helper's spec; another
// entry's argv, or root as the identity to take, is refused.
func TestAsRoot(t *testing.T) {
	p := &policy.Policy{User: policy.Identity{UID: 65534, GID: 65533}}
	want := protocol.Identity{UID: 65534, GID: 65533}
	for _, tt := range []struct {
		argv []string
		get  func([]string) (*protocol.Identity, error)
	}{
		{HoldArgv(protocol.Hold{Lifeline: true}), func(a []string) (*protocol.Identity, error) {
			h, err := protocol.DecodeHold(a)
			return h.RunAs, err
		}},
		{ExecArgv(ExecSpec(p, backends.Command{Argv: []string{"true"}})), func(a []string) (*protocol.Identity, error) {
			x, err := protocol.DecodeExec(a)
			return x.RunAs, err
		}},
		{ExportArgv(p), func(a []string) (*protocol.Identity, error) {
			e, err := protocol.DecodeExport(a)
			return e.RunAs, err
		}},
	} {
		argv, err := AsRoot(tt.argv, p)
		if err != nil {
			t.Fatalf("%s: %v", tt.argv[1], err)
		}
		got, err := tt.get(argv[2:])
		if err != nil || got == nil || *got != want {
			t.Errorf("%s: run_as = %+v (%v), want %+v", tt.argv[1], got, err, want)
		}
	}
	watch := protocol.MustArgv(InitPath, protocol.EntryWatch, protocol.Watch{Container: "abc", Owner: 1, OwnerStart: "1"})
	if _, err := AsRoot(watch, p); err == nil {
		t.Error("a watcher's argv took an identity")
	}
	root := &policy.Policy{}
	if _, err := AsRoot(HoldArgv(protocol.Hold{}), root); err == nil {
		t.Error("root was taken as the identity to take")
	}
}

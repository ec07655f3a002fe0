package holderexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

func TestSaidLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"  \n ":                  "",
		"runc: oops\n  second  ": ": runc: oops second",
		fmt.Sprintf("triage-sandbox-status {\"protocol\":%d,\"state\":\"staging_failed\",\"detail\":\"full\"}\n", protocol.Version): ": staging failed: full",
	} {
		if got := SaidLine([]byte(in)); got != want {
			t.Errorf("SaidLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeSandbox is a sandbox that stays up.
type fakeSandbox struct{ exited chan struct{} }

func (f fakeSandbox) ID() string              { return "fake" }
func (f fakeSandbox) Exited() <-chan struct{} { return f.exited }
func (f fakeSandbox) Kill()                   {}
func (f fakeSandbox) Killed() bool            { return false }
func (f fakeSandbox) Said() string            { return "" }

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// TestSupervisorTimeoutWinningTheRace: on a busy host the supervisor's own
// 124 can arrive while the host's timer has fired but not been read; the
// host still calls it a timeout (it is the judge, its clock started first).
// Here the host is "descheduled" through the start, so both are ready when
// it looks: before the fix about half of these runs said exit 124 without
// timed_out.
func TestSupervisorTimeoutWinningTheRace(t *testing.T) {
	const timeout = 20 * time.Millisecond
	for i := 0; i < 20; i++ {
		r := Run{
			Policy:  &policy.Policy{},
			Sandbox: fakeSandbox{exited: make(chan struct{})},
			Start: func(ctx context.Context, _ protocol.Exec, gate *OutputHold, exportW *os.File) (*Started, error) {
				_, _ = gate.Stdout().Write([]byte{protocol.ExecStarted})
				time.Sleep(timeout + 10*time.Millisecond)
				return &Started{Stdin: nopWriteCloser{}, Wait: func() error { return &ExitStatus{Code: 124} }}, nil
			},
		}
		res, err := r.Exec(context.Background(), backends.Command{Argv: []string{"sleep", "30"}, Timeout: timeout}, backends.Streams{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.TimedOut || res.ExitCode != 124 {
			t.Fatalf("try %d: exit %d timed out %v, want 124 and timed out", i, res.ExitCode, res.TimedOut)
		}
	}
}

// TestCopyBackBoundCountsFromTheExport: a command that runs longer than
// the copy back's bound still has its outputs copied: the bound counts
// from the export's first byte, not from the command's start.
func TestCopyBackBoundCountsFromTheExport(t *testing.T) {
	dir := t.TempDir()
	p := &policy.Policy{Mounts: []policy.Mount{{Path: dir, Kind: "dir", Why: "writable"}}}
	staged := []stage.Path{{Path: dir, Kind: stage.KindDir}}
	m := stage.Manifest{}
	r := Run{Policy: p, Manifest: &m, CopyBackBound: 100 * time.Millisecond}
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(300 * time.Millisecond) // the command runs past the bound
		_ = stage.Export(pw, staged)
		_ = pw.Close()
	}()
	if a := r.apply(context.Background(), pr, staged); a.err != nil {
		t.Fatalf("the copy back of a command longer than the bound: %v", a.err)
	}
}

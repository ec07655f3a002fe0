package sandboxinit

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
)

// TestControlWaitsUntilArmed: with a control channel the holder says it is
// ready before its signals are refused and its threads reserved (armed),
// so the channel reads no request until then: one sent early waits in the
// channel and is answered once the holder is armed, never before.
func TestControlWaitsUntilArmed(t *testing.T) {
	host, holder, err := control.Pair()
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := control.NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	a := &armed{done: make(chan struct{}), unrefuse: func() {}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := HoldOptions{Control: holder, Stderr: os.Stderr, Helper: "/nonexistent/helper", HelperEntries: []protocol.Entry{protocol.EntryExec}}
	startControl(ctx, o, nil, nil, a)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	files := []*os.File{devnull, devnull, devnull}
	// A request the holder refuses: its reply says when it was read.
	answered := make(chan error, 1)
	go func() {
		_, err := ctl.Start(context.Background(), []string{"/bin/true"}, "", nil, files)
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a request was answered before the holder was armed: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(a.done)
	select {
	case err := <-answered:
		if err == nil || errors.Is(err, control.ErrClosed) || !strings.Contains(err.Error(), "starts only") {
			t.Fatalf("the early request once armed: %v, want the holder's refusal", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the early request was not answered once the holder was armed")
	}
}

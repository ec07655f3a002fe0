package holderexec

import (
	"bytes"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestOutputHold: output reaches the caller only after the supervisor's
// start marker; a runtime's failure text before it is kept aside.
func TestOutputHold(t *testing.T) {
	tests := []struct {
		name   string
		writes []struct {
			stderr bool
			data   string
		}
		opened        bool
		out, err, why string
	}{
		{name: "runtime failure", writes: []struct {
			stderr bool
			data   string
		}{
			{false, "OCI runtime exec failed: exec failed: unable to start container process: error executing setns process: exit status 1: unknown\r\n"}},
			why: "OCI runtime exec failed"},
		{name: "started", writes: []struct {
			stderr bool
			data   string
		}{
			{false, string([]byte{protocol.ExecStarted}) + "hello\n"}, {true, "warn\n"}, {false, "\x00bye\n"}},
			opened: true, out: "hello\n\x00bye\n", err: "warn\n"},
		// The runtime copies stdout and stderr apart: the command's first
		// stderr can overtake the marker. Once the marker comes (the
		// supervisor started), it is passed on, in order.
		{name: "stderr that overtakes the marker is passed on", writes: []struct {
			stderr bool
			data   string
		}{
			{true, "err\n"}, {false, string([]byte{protocol.ExecStarted}) + "out\n"}, {true, "more\n"}},
			opened: true, out: "out\n", err: "err\nmore\n"},
		{name: "a failed start keeps stderr back", writes: []struct {
			stderr bool
			data   string
		}{
			{true, "OCI runtime exec failed\n"}},
			opened: false, why: "OCI runtime exec failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			g := NewOutputHold(&out, &errOut)
			for _, w := range tt.writes {
				dst := g.Stdout()
				if w.stderr {
					dst = g.Stderr()
				}
				if n, err := dst.Write([]byte(w.data)); err != nil || n != len(w.data) {
					t.Fatalf("write %q: %d %v", w.data, n, err)
				}
			}
			if g.Opened() != tt.opened || out.String() != tt.out || errOut.String() != tt.err {
				t.Errorf("opened %v out %q err %q", g.Opened(), out.String(), errOut.String())
			}
			if tt.why != "" && !bytes.Contains([]byte(g.Failure()), []byte(tt.why)) {
				t.Errorf("failure %q lacks %q", g.Failure(), tt.why)
			}
		})
	}
}

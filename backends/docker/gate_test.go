package docker

import (
	"bytes"
	"github.com/triage-sandbox/triage-sandbox/backends"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/sandboxinit"
)

// TestStartGate: output reaches the caller only after the supervisor's
// start marker; a runtime's failure text before it is kept aside.
func TestStartGate(t *testing.T) {
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
			{false, string([]byte{sandboxinit.StartMarker}) + "hello\n"}, {true, "warn\n"}, {false, "\x00bye\n"}},
			opened: true, out: "hello\n\x00bye\n", err: "warn\n"},
		{name: "stderr before the marker is held back", writes: []struct {
			stderr bool
			data   string
		}{
			{true, "runtime noise\n"}, {false, string([]byte{sandboxinit.StartMarker})}, {false, "x"}},
			opened: true, out: "x", why: "runtime noise"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			g := backends.NewStartGate(&out, &errOut)
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

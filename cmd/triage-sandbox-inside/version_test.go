package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestVersionMismatch: the real inside binary, handed a spec of another
// protocol version (a CLI of another build), refuses with one line that
// says what to rebuild, before it reads the spec; a holder says so also
// as a status line carrying its own version, which the host reads.
func TestVersionMismatch(t *testing.T) {
	testenv.SkipShort(t, "builds the inside binary")
	bin := testenv.InsideBinary(t)
	for _, tt := range []struct {
		entry   protocol.Entry
		spec    string
		version int
		status  bool
	}{
		{protocol.EntryExec, `{"argv":["true"]}`, 0, false}, // a build before versions
		{protocol.EntryExec, `{"protocol":99,"spec":{"argv":["true"],"new_field":1}}`, 99, false},
		{protocol.EntryHold, `{"protocol":0,"spec":{}}`, 0, true},
		{protocol.EntryLocal, `{"protocol":98,"spec":{}}`, 98, true}, // a later build
	} {
		t.Run(fmt.Sprintf("%s/%d", tt.entry, tt.version), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			// A binary that read the spec anyway would hold: the deadline ends it.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, string(tt.entry), tt.spec)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitcode.Refused {
				t.Fatalf("exit: %v, want %d; stderr %q", err, exitcode.Refused, stderr.String())
			}
			want := fmt.Sprintf("speaks protocol %d, this inside binary %s speaks %d: rebuild both", tt.version, bin, protocol.Version)
			if strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), want) {
				t.Fatalf("stderr %q, want one line containing %q", stderr.String(), want)
			}
			s, ok := protocol.First(stdout.Bytes(), protocol.StateHolderFailed)
			if ok != tt.status {
				t.Fatalf("holder_failed status on stdout: %v, want %v (stdout %q)", ok, tt.status, stdout.String())
			}
			if ok && (s.Mismatch("x") != nil || !strings.Contains(s.Detail, want)) {
				t.Fatalf("status %+v: want this build's version and the mismatch as detail", s)
			}
		})
	}
}

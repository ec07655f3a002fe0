package holderexec

import (
	"errors"
	"strings"
	"testing"
)

// TestHolderEndSaysOutsideOnlyOnEvidence: "stopped from outside" only for
// a SIGKILL the host did not send and no OOM kill, or the backend's own
// record; never for an exit the command may have caused.
func TestHolderEndSaysOutsideOnlyOnEvidence(t *testing.T) {
	tests := []struct {
		name    string
		end     HolderEnd
		outside bool
		want    string
	}{
		{"sigkill from outside", HolderEnd{Code: ExitKilled, Outside: "`docker kill`"}, true, "SIGKILL"},
		{"the backend's record", HolderEnd{Code: 2, Record: "the daemon recorded it"}, true, "the daemon recorded it"},
		{"the host killed it", HolderEnd{Code: ExitKilled, KilledByHost: true}, false, "ended under the command (exit 137)"},
		{"oom", HolderEnd{Code: ExitKilled, OOMKilled: true}, false, "ran out of memory"},
		{"its lifetime", HolderEnd{Code: ExitKilled, Said: []byte("triage-sandbox: sandbox lifetime exceeded; killed\n")}, false, "lifetime"},
		{"sigterm", HolderEnd{Code: 143}, false, "ended under the command (exit 143)"},
		{"a crash", HolderEnd{Code: 2}, false, "ended under the command (exit 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.end.Err()
			if errors.Is(err, ErrStoppedOutside) != tt.outside || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: outside %v, want %v and %q", err, errors.Is(err, ErrStoppedOutside), tt.outside, tt.want)
			}
		})
	}
}

package holderexec

import (
	"sync"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// Holder is what holderexec reads of a sandbox's holder process, the same
// for every backend that has one: what it printed, whether it ended, and
// the warnings for the caller. Backends get it through holder.Base, which
// makes its Gone.
type Holder struct {
	// Out is what the holder (or the runtime that ran it) printed.
	Out SmallBuffer
	// Gone is closed once the holder has ended.
	Gone chan struct{}

	mu       sync.Mutex
	warnings []string
}

// Exited implements Sandbox.
func (h *Holder) Exited() <-chan struct{} { return h.Gone }

// Ended reports whether the holder has ended.
func (h *Holder) Ended() bool {
	select {
	case <-h.Gone:
		return true
	default:
		return false
	}
}

// Said is what the holder printed, on one line for an error message ("" or
// ": ...").
func (h *Holder) Said() string { return SaidLine(h.Out.Bytes()) }

// SaidLine is what a holder printed, out, as one line to end an error
// message with: "" or ": ...", its status lines as a person reads them.
func SaidLine(out []byte) string {
	if t := protocol.Human(out); t != "" {
		return ": " + t
	}
	return ""
}

// Warn adds a warning for the caller.
func (h *Holder) Warn(w string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.warnings = append(h.warnings, w)
}

// Warnings implements backends.Sandbox.
func (h *Holder) Warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.warnings...)
}

package holderexec

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHolderPipe: the kept end is on the poller (a deadline applies to
// it) and the passed end is a blocking descriptor as the command expects;
// both close on exec, and what is written comes out of the other end.
func TestHolderPipe(t *testing.T) {
	for _, keepRead := range []bool{true, false} {
		kept, passed, err := holderPipe(keepRead)
		if err != nil {
			t.Fatal(err)
		}
		r, w := kept, passed
		if !keepRead {
			r, w = passed, kept
		}
		flags, err := unix.FcntlInt(passed.Fd(), unix.F_GETFL, 0)
		if err != nil || flags&unix.O_NONBLOCK != 0 {
			t.Errorf("keepRead %v: the passed end's flags %#x (%v): want it blocking", keepRead, flags, err)
		}
		for _, f := range []*os.File{kept, passed} {
			if fd, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || fd&unix.FD_CLOEXEC == 0 {
				t.Errorf("keepRead %v: %s not close-on-exec (%#x, %v)", keepRead, f.Name(), fd, err)
			}
		}
		if err := kept.SetDeadline(time.Now().Add(time.Millisecond)); err != nil {
			t.Fatalf("keepRead %v: the kept end takes no deadline (not on the poller): %v", keepRead, err)
		}
		if keepRead {
			if _, err := kept.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("a read of the empty kept end: %v, want the deadline's error", err)
			}
		}
		_ = kept.SetDeadline(time.Time{})
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if n, err := r.Read(b); n != 1 || b[0] != 'x' || err != nil {
			t.Errorf("keepRead %v: read %q, %v", keepRead, b[:n], err)
		}
		kept.Close()
		passed.Close()
	}
}

//go:build !linux

package holderexec

import "os"

// holderPipe is os.Pipe's ends: the one kept here (the read end when
// keepRead) and the one passed to the holder.
func holderPipe(keepRead bool) (kept, passed *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil || keepRead {
		return r, w, err
	}
	return w, r, nil
}

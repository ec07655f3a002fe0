//go:build unix

package hints

import (
	"os"
	"syscall"
)

// hostLstat is os.Lstat's owner and mode.
func hostLstat(path string) (Entry, bool) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Entry{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Entry{}, false
	}
	return Entry{UID: int(st.Uid), GID: int(st.Gid), Mode: fi.Mode()}, true
}

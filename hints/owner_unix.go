//go:build unix

package hints

import (
	"os"
	"path/filepath"
	"syscall"
)

// hostOwner is the owner of path or of its nearest existing directory.
func hostOwner(path string) (Owner, bool) {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err == nil {
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok {
				return Owner{}, false
			}
			return Owner{Path: p, UID: int(st.Uid), GID: int(st.Gid), Mode: fi.Mode()}, true
		}
		if p == filepath.Dir(p) {
			return Owner{}, false
		}
	}
}

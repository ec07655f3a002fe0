package policy

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// A python environment made from the system's interpreter (python =
// "/usr/bin/python3", or a venv whose pyvenv.cfg home is /usr/bin) brings
// mounts of system directories: /usr itself, or a prefix inside it. Those
// are the same directories the readable base already gives (the local
// backend's host roots, the host toolchain's /usr on an image), so they
// are decided here, once, instead of by each backend:
//
//   - markSystem marks them System, which keeps them out of the socket scan
//     (see systemDir for why that is safe): without it every run walked the
//     whole of /usr, about 18,000 directories, for sockets no one can put
//     there.
//   - joinSystemMounts drops the read-only mounts a host root already
//     exposes at the same path, so a backend never gets one directory
//     twice (the local backend's plan refused /usr bound twice, and every
//     run failed); on an image, dedupeMounts merges a system mount with the
//     host toolchain's one of the same path.

// markSystem marks each read-only mount that is a system directory
// (systemDir under trees) as System.
func markSystem(rd *hostread.Recorder, ms []Mount, trees []string) {
	for i := range ms {
		if ms[i].ReadOnly && !ms[i].Discard && ms[i].Kind == "dir" && systemDir(rd, ms[i].Path, trees) {
			ms[i].System = true
		}
	}
}

// systemDir reports whether dir lies in one of trees (profiles.SystemTrees)
// and every directory from that tree's top down to dir is root's and
// writable by no one else.
//
// Why a system directory needs no socket scan: a socket file is made by
// bind(2), which needs write permission on the directory it is made in.
// In a directory that root owns and that neither its group nor others may
// write, only root can make one. Root is the host's owner, not a party the
// sandbox defends against, and nothing root runs keeps a socket in these
// trees: they hold the system's programs and libraries, written by the
// package manager, and daemons put their sockets in /run, /tmp or /var.
// The check is made from the tree's top, so a venv's prefix under a
// /usr/local that an administrator handed to a user (chown) is scanned
// like any user's mount. What it does not see: a directory deeper inside
// a system directory that root handed to someone else (Debian's old
// group-writable /usr/local/*). Only root can make it so, and the local
// backend's host roots and the host toolchain's /usr have always been
// trusted the same way.
func systemDir(rd *hostread.Recorder, dir string, trees []string) bool {
	dir = filepath.Clean(dir)
	top := slices.IndexFunc(trees, func(t string) bool { return within(t, dir) })
	if top < 0 {
		return false
	}
	cur := trees[top]
	rest := strings.TrimPrefix(strings.TrimPrefix(dir, cur), "/")
	for {
		if !rootsAlone(rd, cur) {
			return false
		}
		if rest == "" {
			return true
		}
		part, more, _ := strings.Cut(rest, "/")
		cur, rest = filepath.Join(cur, part), more
	}
}

// rootsAlone: path is a directory (not a symlink) that root owns and that
// no one else may write.
func rootsAlone(rd *hostread.Recorder, path string) bool {
	fi, err := rd.Lstat(path)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0
}

// joinSystemMounts drops, on a host-root base, each read-only system mount
// that a host root already exposes (the root itself or a directory in
// it): the root gives it read-only at the same path.
func joinSystemMounts(p *Policy) {
	if p.Base.Kind != BaseHost {
		return
	}
	p.Mounts = slices.DeleteFunc(p.Mounts, func(m Mount) bool {
		return m.System && m.ReadOnly && !m.Discard &&
			slices.ContainsFunc(p.Base.HostRoots, func(r string) bool { return within(r, m.Path) })
	})
}

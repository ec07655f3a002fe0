package hostread

import (
	"os"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

// Ident is what a path was: its stat identity, or the error looking at
// it gave (ENOENT: absent).
type Ident struct {
	Err              string
	Dev, Ino, Nlink  uint64
	Mode, UID, GID   uint32
	Size             int64
	MtimeNs, CtimeNs int64
	Link             string // a symlink's target (NoFollow)
}

const errUnsupported = "identity unsupported on this OS"

var errNoEnt = syscall.ENOENT.Error()

const (
	modeType = syscall.S_IFMT
	modeDir  = syscall.S_IFDIR
)

func identOf(path string, kind Kind) Ident {
	var st syscall.Stat_t
	var err error
	if kind == NoFollow {
		err = syscall.Lstat(path, &st)
	} else {
		err = syscall.Stat(path, &st)
	}
	if err != nil {
		if en, ok := err.(syscall.Errno); ok {
			return Ident{Err: "errno " + en.Error()}
		}
		return Ident{Err: err.Error()}
	}
	if kind == Exists {
		return Ident{}
	}
	id := Ident{Dev: st.Dev, Ino: st.Ino, Nlink: uint64(st.Nlink), Mode: st.Mode, UID: st.Uid, GID: st.Gid,
		Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}
	if kind != List && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		// A directory looked at, not listed: its type, mode and owner
		// are what a compile can use. Its times, size and link count
		// change with every entry made in it (/tmp, a home), and an
		// entry the compile looks up is a Read of its own.
		id.Size, id.Nlink, id.MtimeNs, id.CtimeNs = 0, 0, 0, 0
	}
	if kind == NoFollow && st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		if id.Link, err = os.Readlink(path); err != nil {
			id.Err = "readlink: " + err.Error()
		}
	}
	return id
}

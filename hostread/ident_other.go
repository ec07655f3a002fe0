//go:build !linux

package hostread

import "syscall"

const noFollow = syscall.O_NOFOLLOW

// Ident is what a path was. Outside Linux it is not taken: every Read
// counts as changed, so nothing is reused.
type Ident struct {
	Err              string
	Dev, Ino, Nlink  uint64
	Mode, UID, GID   uint32
	Size             int64
	MtimeNs, CtimeNs int64
	Link             string
}

const errUnsupported = "identity unsupported on this OS"

var errNoEnt = syscall.ENOENT.Error()

const (
	modeType = 0o170000
	modeDir  = 0o040000
)

func identOf(string, Kind) Ident { return Ident{Err: errUnsupported} }

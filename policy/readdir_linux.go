package policy

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// direntBufSize is the buffer one scan reuses for every directory.
const direntBufSize = 32 << 10

// readDir reads at most n entries of dir into buf; more says there were
// others.
// A directory the caller cannot read is skipped: the sandbox, running as
// the caller or as the workspace owner, could not list it either.
//
// It reads the directory with getdents64 itself: os.File.ReadDir costs
// nine system calls a directory (the runtime's poller tries each one, and
// puts it back), this four, and a scan makes one per directory of every
// mount on every run (a venv's prefix with its site-packages: 8,000).
func readDir(rd *hostread.Recorder, dir string, n int, buf []byte) (entries []dirEntry, more bool) {
	rd.NoteList(dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	for {
		got, err := unix.Getdents(fd, buf)
		if err != nil || got <= 0 {
			return entries, false
		}
		for rec := buf[:got]; len(rec) > 0; {
			e, size, ok := parseDirent(fd, rec)
			if !ok {
				return entries, false
			}
			rec = rec[size:]
			if e.name == "." || e.name == ".." {
				continue
			}
			if len(entries) == n {
				return entries, true
			}
			entries = append(entries, e)
		}
	}
}

// linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1),
// then the name, NUL-terminated.
const direntNameOff = 19

// parseDirent decodes the record at the start of rec and says how long it
// is. A file system that gives no type (DT_UNKNOWN) is asked with an
// lstat, relative to the directory.
func parseDirent(dirfd int, rec []byte) (dirEntry, int, bool) {
	if len(rec) < direntNameOff {
		return dirEntry{}, 0, false
	}
	size := int(binary.NativeEndian.Uint16(rec[16:18]))
	if size < direntNameOff || size > len(rec) {
		return dirEntry{}, 0, false
	}
	name := rec[direntNameOff:size]
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	e := dirEntry{name: string(name)}
	typ := rec[18]
	if typ == unix.DT_UNKNOWN {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return e, size, true
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			typ = unix.DT_DIR
		case unix.S_IFSOCK:
			typ = unix.DT_SOCK
		}
	}
	e.dir, e.sock = typ == unix.DT_DIR, typ == unix.DT_SOCK
	return e, size, true
}

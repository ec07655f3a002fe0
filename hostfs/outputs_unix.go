//go:build unix

package hostfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// What a run leaves in its outputs is never trusted: after each run the
// writable paths are walked by descriptor (never following a symlink, never
// opening a FIFO or device for reading) and
//   - set-id bits are removed from files and directories,
//   - names that make a tool run code when a person or a program later opens
//     the outputs (a nested .git, .envrc, editor and devcontainer settings)
//     are renamed out of the tools' way unless the config allows them there
//     (removed when they cannot be moved: never left live),
//   - symlinks, FIFOs, sockets, devices and hard-linked files are listed.

// QuarantineSuffix starts what is appended to a renamed tool-config entry:
// NAME.quarantined-by-triage-sandbox-STAMP-RANDOM (see quarantine_unix.go).
const QuarantineSuffix = ".quarantined-by-triage-sandbox"

// Bounds of one inspection: a run that leaves more is reported as not
// fully inspected.
const (
	maxEntries = 200000
	maxDepth   = 64
)

// Leftover is one thing a run left in its outputs that a host reader must
// know about.
type Leftover struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"` // symlink, fifo, socket, device, hardlink, setuid, setgid, tool-config
	Detail string `json:"detail,omitempty"`
	// Action is what triage-sandbox did: "listed", "set-id bits removed",
	// "renamed to NAME".
	Action string `json:"action"`
}

// Inspection is what InspectOutputs found.
type Inspection struct {
	Leftovers []Leftover `json:"leftovers,omitempty"`
	Entries   int        `json:"entries"`
	// Incomplete says the walk stopped at its bounds; what lies beyond was
	// not inspected.
	Incomplete string `json:"incomplete,omitempty"`
}

// InspectOutputs walks each writable path rel (below root: a directory or
// a file) and neutralises what a run left: toolNames are moved aside except
// in the writable paths allowTools lists. A problem with one entry does not
// stop the walk; the error joins them all, one per entry, each saying what
// was done instead.
func InspectOutputs(root string, writable, toolNames, allowTools []string) (Inspection, error) {
	w := walker{rename: renameNoReplace, remove: removeAll}
	return w.inspect(root, writable, toolNames, allowTools)
}

// walker is one inspection; rename and remove are the filesystem
// operations the quarantine uses (tests make them fail).
type walker struct {
	ins        *Inspection
	toolNames  []string
	allowTools bool
	errs       []error
	rename     func(olddirfd int, from string, newdirfd int, to string) error
	remove     func(dirfd int, name string) error
}

func (w walker) inspect(root string, writable, toolNames, allowTools []string) (Inspection, error) {
	var ins Inspection
	w.ins, w.toolNames = &ins, toolNames
	for _, rel := range writable {
		parts := splitRel(rel)
		if len(parts) == 0 {
			continue
		}
		parent, err := openDirBeneath(root, filepath.Join(parts[:len(parts)-1]...), false)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			w.fail(err)
			continue
		}
		w.allowTools = slices.Contains(allowTools, rel)
		w.fail(w.entry(parent, parts[len(parts)-1], filepath.Join(root, rel), 0, true))
		unix.Close(parent)
	}
	return ins, errors.Join(w.errs...)
}

func (w *walker) add(l Leftover) { w.ins.Leftovers = append(w.ins.Leftovers, l) }

// fail records a problem; the walk goes on.
func (w *walker) fail(err error) {
	if err != nil {
		w.errs = append(w.errs, err)
	}
}

func (w *walker) dir(fd int, path string, depth int) error {
	if depth > maxDepth {
		w.ins.Incomplete = fmt.Sprintf("deeper than %d levels at %s", maxDepth, path)
		return nil
	}
	names, err := readDirNames(fd)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	for _, name := range names {
		if w.ins.Entries++; w.ins.Entries > maxEntries {
			w.ins.Incomplete = fmt.Sprintf("more than %d entries", maxEntries)
			return nil
		}
		w.fail(w.entry(fd, name, filepath.Join(path, name), depth, false))
		if w.ins.Incomplete != "" {
			return nil
		}
	}
	return nil
}

// entry inspects name in the directory fd; top is the writable path itself
// (a bind mount target: never renamed).
func (w *walker) entry(fd int, name, child string, depth int, top bool) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil // gone meanwhile
	}
	mode := uint32(st.Mode)
	if !top && !w.allowTools && slices.Contains(w.toolNames, name) {
		w.quarantine(fd, name, child, mode)
		return nil
	}
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, _ := readlinkat(fd, name)
		w.add(Leftover{Path: child, Kind: "symlink", Detail: "-> " + target, Action: "listed"})
	case unix.S_IFIFO:
		w.add(Leftover{Path: child, Kind: "fifo", Action: "listed"})
	case unix.S_IFSOCK:
		w.add(Leftover{Path: child, Kind: "socket", Action: "listed"})
	case unix.S_IFCHR, unix.S_IFBLK:
		w.add(Leftover{Path: child, Kind: "device", Action: "listed"})
	case unix.S_IFREG:
		if st.Nlink > 1 {
			w.add(Leftover{Path: child, Kind: "hardlink", Detail: fmt.Sprintf("%d links", st.Nlink), Action: "listed"})
		}
		if err := w.clearSetID(fd, name, child, mode, unix.O_RDONLY|unix.O_NONBLOCK); err != nil {
			// A set-id program that keeps its bits is not left behind.
			if rerr := w.remove(fd, name); rerr != nil {
				return fmt.Errorf("%w; nor could it be removed (%w): do not run it", err, rerr)
			}
			w.add(Leftover{Path: child, Kind: setIDKind(mode), Detail: fmt.Sprintf("mode %04o", mode&0o7777), Action: "removed: its set-id bits could not be removed"})
			return fmt.Errorf("%w; removed it", err)
		}
	case unix.S_IFDIR:
		if err := w.clearSetID(fd, name, child, mode, unix.O_RDONLY|unix.O_DIRECTORY); err != nil {
			return err
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
		if err != nil {
			return nil // replaced or unreadable meanwhile
		}
		defer unix.Close(sub)
		return w.dir(sub, child, depth+1)
	}
	return nil
}

// clearSetID removes set-uid/set-gid bits through a descriptor of the very
// entry that was inspected.
func (w *walker) clearSetID(dirfd int, name, path string, mode uint32, flags int) error {
	bits := mode & (unix.S_ISUID | unix.S_ISGID)
	if bits == 0 {
		return nil
	}
	fd, err := unix.Openat(dirfd, name, flags|openFlags, 0)
	if err != nil {
		return fmt.Errorf("opening %s to remove its set-id bits: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, mode&0o1777); err != nil {
		return fmt.Errorf("removing the set-id bits of %s: %w", path, err)
	}
	w.add(Leftover{Path: path, Kind: setIDKind(mode), Detail: fmt.Sprintf("mode %04o", mode&0o7777), Action: "set-id bits removed"})
	return nil
}

// setIDKind names the set-id bits of mode: setgid alone, else setuid.
func setIDKind(mode uint32) string {
	if mode&(unix.S_ISUID|unix.S_ISGID) == unix.S_ISGID {
		return "setgid"
	}
	return "setuid"
}

// ReadDirNames lists the directory open at fd (through a new descriptor,
// so fd's offset is untouched).
func ReadDirNames(fd int) ([]string, error) { return readDirNames(fd) }

// Readlinkat reads the symlink name in the directory open at dirfd.
func Readlinkat(dirfd int, name string) (string, error) { return readlinkat(dirfd, name) }

func readDirNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := newDirFile(dup)
	defer f.Close()
	return f.Readdirnames(-1)
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

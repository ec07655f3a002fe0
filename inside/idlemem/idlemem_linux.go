package idlemem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"

	"golang.org/x/sys/unix"
)

// dropText advises away (MADV_DONTNEED) every mapping of the binary that
// holds this function's code whose permissions exclude writing: its text
// and read-only data. Those are private file mappings never written (a
// static Go binary has no relocations), so dropping them loses nothing;
// the next touch maps the page cache's copy again.
func dropText() error {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	ranges, err := readOnlyOfBinary(maps, uint64(reflect.ValueOf(dropText).Pointer()))
	if err != nil {
		return err
	}
	for _, r := range ranges {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(r[0]), uintptr(r[1]-r[0]), unix.MADV_DONTNEED); e != 0 {
			return fmt.Errorf("madvise %#x-%#x: %w", r[0], r[1], e)
		}
	}
	return nil
}

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end uint64
	perms      string
	dev, inode string
}

// readOnlyOfBinary returns the [start, end) ranges of maps (the text of
// /proc/PID/maps) that map the same file (device and inode) as the mapping
// holding pc, without write permission. A mapping of no file (inode 0)
// holding pc, or a line it cannot read, is an error: nothing is dropped.
func readOnlyOfBinary(maps []byte, pc uint64) ([][2]uint64, error) {
	var all []mapping
	var self *mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 {
			return nil, fmt.Errorf("/proc/self/maps: line %q", sc.Bytes())
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			return nil, fmt.Errorf("/proc/self/maps: range %q", f[0])
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start || len(f[1]) != 4 {
			return nil, fmt.Errorf("/proc/self/maps: line %q", sc.Bytes())
		}
		all = append(all, mapping{start: start, end: end, perms: string(f[1]), dev: string(f[3]), inode: string(f[4])})
		if pc >= start && pc < end {
			self = &all[len(all)-1]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if self == nil || self.inode == "0" {
		return nil, fmt.Errorf("/proc/self/maps: no file mapping holds %#x", pc)
	}
	var out [][2]uint64
	for _, m := range all {
		if m.dev == self.dev && m.inode == self.inode && m.perms[1] != 'w' {
			out = append(out, [2]uint64{m.start, m.end})
		}
	}
	return out, nil
}

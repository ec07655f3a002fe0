//go:build linux || darwin

package probe

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// opInheritedFDs looks at every descriptor above 2 that this process
// holds but did not open: one that is the caller's canary file (same
// device and inode as Args dev and ino, expected at Args fd) is held, and
// a regular file whose first bytes hold Args canary is read. OK when
// either happened. Only regular files are read (a pipe or socket could
// block); the others are listed by kind.
func opInheritedFDs(s Step, _ string) Observation {
	own := -1
	names, err := fdNames(&own)
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	if want := s.Args["fd"]; want != "" && !containsString(names, want) {
		names = append(names, want) // a descriptor the listing hides is still tried
	}
	held, found := false, false
	var seen []string
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == own {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			continue
		}
		seen = append(seen, n+":"+fileKind(uint32(st.Mode)))
		if strconv.FormatUint(uint64(st.Dev), 10) == s.Args["dev"] && strconv.FormatUint(st.Ino, 10) == s.Args["ino"] {
			held = true
		}
		if uint32(st.Mode)&unix.S_IFMT == unix.S_IFREG && readsToken(fd, s.Args["canary"]) {
			found = true
		}
	}
	detail := "descriptors above 2: " + strings.Join(seen, " ")
	if len(seen) == 0 {
		detail = "no descriptor above 2 but its own"
	}
	if held || found {
		detail = fmt.Sprintf("the caller's canary descriptor %s: held %v, canary read %v (%s)", s.Args["fd"], held, found, detail)
	}
	return Observation{OK: held || found, Detail: detail,
		Values: map[string]string{"held": strconv.FormatBool(held), "found": strconv.FormatBool(found)}}
}

// fdNames lists this process's descriptors; own is the listing's own.
func fdNames(own *int) ([]string, error) {
	dir := "/proc/self/fd"
	if runtime.GOOS == "darwin" {
		dir = "/dev/fd"
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	*own = int(f.Fd())
	return f.Readdirnames(-1)
}

func readsToken(fd int, token string) bool {
	if token == "" {
		return false
	}
	buf := make([]byte, 4096)
	n, err := unix.Pread(fd, buf, 0)
	return err == nil && bytes.Contains(buf[:n], []byte(token))
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFIFO:
		return "pipe"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "chardev"
	}
	return "other"
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

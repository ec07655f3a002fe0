//go:build linux

package oomwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
)

// ForPID watches the memory cgroup of pid (a sandbox's init or, under
// gVisor, its kernel process).
func ForPID(pid int) (Counter, error) {
	dir, err := cgroupfs.ControllerDir(pid, "memory")
	if err != nil {
		return nil, fmt.Errorf("oomwatch: %w", err)
	}
	if dir.V2 {
		return &v2{events: filepath.Join(dir.Path, "memory.events")}, nil
	}
	w, err := watchV1(dir.Path)
	if err != nil {
		return nil, fmt.Errorf("oomwatch: %s: %w", dir.Path, err)
	}
	return w, nil
}

// v1 registers an eventfd for memory.oom_control through
// cgroup.event_control. The kernel signals it once per OOM in the cgroup,
// before the kill, and once more when the cgroup is removed: a signal read
// while the cgroup still exists is an OOM; once it is gone, every signal
// but the last (the removal) is.
type v1 struct {
	mu      sync.Mutex
	efd     *os.File
	control string
	kills   uint64
	removed bool
}

func watchV1(dir string) (*v1, error) {
	control := filepath.Join(dir, "memory.oom_control")
	oc, err := os.Open(control)
	if err != nil {
		return nil, err
	}
	defer oc.Close()
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	efd := os.NewFile(uintptr(fd), "oom eventfd")
	reg := fmt.Sprintf("%d %d", fd, oc.Fd())
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(reg), 0); err != nil {
		efd.Close()
		return nil, fmt.Errorf("registering for OOM notifications: %w", err)
	}
	return &v1{efd: efd, control: control}, nil
}

func (w *v1) Kills(settle time.Duration) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return w.kills
	}
	n := w.read(0)
	if exists(w.control) {
		w.kills += n
		return w.kills
	}
	if n == 0 {
		// Gone, and its removal not yet signalled: wait for it.
		n = w.read(settle)
	}
	if n == 1 {
		// The removal, or an OOM whose removal signal is still coming.
		if more := w.read(settle); more > 0 {
			n += more
		}
	}
	if n > 0 {
		w.kills += n - 1
	}
	w.removed = true
	return w.kills
}

// read takes what the eventfd has counted, waiting up to d for a signal.
func (w *v1) read(d time.Duration) uint64 {
	var buf [8]byte
	if d <= 0 {
		// One attempt, no wait (a past deadline would fail before trying).
		_ = w.efd.SetReadDeadline(time.Time{})
		rc, err := w.efd.SyscallConn()
		if err != nil {
			return 0
		}
		var n int
		_ = rc.Read(func(fd uintptr) bool {
			n, _ = unix.Read(int(fd), buf[:])
			return true
		})
		if n != 8 {
			return 0
		}
		return binary.NativeEndian.Uint64(buf[:])
	}
	_ = w.efd.SetReadDeadline(time.Now().Add(d))
	if n, err := w.efd.Read(buf[:]); err != nil || n != 8 {
		return 0
	}
	return binary.NativeEndian.Uint64(buf[:])
}

func (w *v1) Close() error { return w.efd.Close() }

// v2 reads the oom_kill count of memory.events (hierarchical). A cgroup
// removed before the read keeps the last count seen.
type v2 struct {
	mu     sync.Mutex
	events string
	kills  uint64
}

func (w *v2) Kills(time.Duration) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := os.ReadFile(w.events)
	if err != nil {
		return w.kills
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil && n > w.kills {
				w.kills = n
			}
		}
	}
	return w.kills
}

func (w *v2) Close() error { return nil }

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, os.ErrNotExist)
}

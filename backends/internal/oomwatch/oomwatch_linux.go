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
//
// The kernel skips the signal when another OOM in the cgroup holds its
// lock, and still kills; memory.oom_control's own oom_kill count (4.13+)
// counts every kill, right after the kill's SIGKILL. So while the cgroup
// exists a kill is either news, and a settle waits for the count to catch
// up with an end that could be a kill.
type v1 struct {
	mu      sync.Mutex
	efd     *os.File
	control string
	removed bool
	// signals counts the OOM signals (not the removal's); field0 and field
	// are memory.oom_control's oom_kill count when the watch began and
	// last read. The kills are the larger of the two counts: each kill is
	// in one or both, never counted twice.
	signals       uint64
	field0, field uint64
}

func (w *v1) kills() uint64 { return max(w.signals, w.field-w.field0) }

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
	w := &v1{efd: efd, control: control}
	w.field, _ = oomKillField(control)
	w.field0 = w.field
	return w, nil
}

// oomKillField reads the oom_kill count of a v1 memory.oom_control.
func oomKillField(control string) (uint64, bool) {
	b, err := os.ReadFile(control)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// readField updates the oom_kill count and reports whether it grew.
func (w *v1) readField() bool {
	n, ok := oomKillField(w.control)
	if !ok || n <= w.field {
		return false
	}
	w.field = n
	return true
}

// fieldLag bounds the wait for the oom_kill count to follow a kill's
// SIGKILL: the kernel counts right after sending it, so only a preempted
// OOM killer lags, and a command's SIGKILL that was no OOM kill (a
// timeout's) should not wait the whole settle for news that never comes.
const fieldLag = 250 * time.Millisecond

// settle polls the signal and the count until either has news or d (at
// most fieldLag) passes, or the cgroup is gone.
func (w *v1) settle(d time.Duration) {
	deadline := time.Now().Add(min(d, fieldLag))
	for time.Now().Before(deadline) && exists(w.control) {
		time.Sleep(10 * time.Millisecond)
		n := w.read(0)
		w.signals += n
		if w.readField() || n > 0 {
			return
		}
	}
}

func (w *v1) Kills(settle time.Duration) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return w.kills()
	}
	n := w.read(0)
	if exists(w.control) {
		w.signals += n
		if !w.readField() && n == 0 && settle > 0 {
			w.settle(settle)
		}
		return w.kills()
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
		w.signals += n - 1
	}
	w.removed = true
	return w.kills()
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

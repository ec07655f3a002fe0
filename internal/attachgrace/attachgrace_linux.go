//go:build linux

package attachgrace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
)

// Pass makes a move that changes nothing and returns once it is made: it
// blocks for as long as the grace period lasts (when none passed moments
// ago), so a caller runs it on a goroutine beside its own work. Best
// effort: where the move cannot be written (not root, a read-only or
// missing cgroup filesystem) the error says why, and a runtime started
// meanwhile waits as it would have.
//
// What moves is the calling goroutine's own thread, into the cgroup it is
// in (by its id in a v1 hierarchy's tasks file): never another thread of
// this process, which may be in a sandbox's groups on its own (the local
// backend forks its helper from a thread that joined them), so no
// membership changes. Only where every thread of a process shares its
// cgroup (the unified hierarchy alone) is it the process, into its own.
func Pass() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	file, id, ok := target()
	if !ok {
		return errors.New("attachgrace: no mounted cgroup hierarchy lists this thread")
	}
	// Opened for writing only: a kernel's file, never one to create.
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("attachgrace: %w", err)
	}
	_, err = f.WriteString(id)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("attachgrace: moving %s into %s: %w", id, file, err)
	}
	return nil
}

// target is the file a move that changes nothing writes and what it writes
// there, for the calling (locked) thread.
func target() (file, id string, ok bool) {
	dir, ok := cgroupfs.Own()
	if !ok {
		return "", "", false
	}
	if dir.V2 {
		return path.Join(dir.Path, "cgroup.procs"), strconv.Itoa(os.Getpid()), true
	}
	return path.Join(dir.Path, "tasks"), strconv.Itoa(unix.Gettid()), true
}

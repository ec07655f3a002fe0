// Package attachgrace starts early the grace period that a container
// runtime's move of its container's first process into the container's
// cgroups waits for.
//
// A move of a process between cgroups (a write to cgroup.procs, or a
// thread's id to a v1 tasks file) takes the kernel's one global
// threadgroup lock for writing, and a writer first waits for an RCU grace
// period unless another writer's passed moments ago (the lock's rcu_sync
// stays entered for one more grace period after its last writer). runc
// makes that move in the middle of every start, with the container's
// init waiting: 9-13 ms of a 45-50 ms start on this machine's kernel,
// spent idle. A move that changes nothing, made on a goroutine as the
// runtime is spawned, lets the grace period pass beside the runtime's
// own start and its move finds it passed (Pass). A kernel whose
// hierarchy is mounted with favordynmods never waits; there this costs a
// write.
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
	if err := os.WriteFile(file, []byte(id), 0); err != nil {
		return fmt.Errorf("attachgrace: %w", err)
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

package seccompfilter

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bpfMaxInsns is the kernel's limit on a classic BPF program (BPF_MAXINSNS).
const bpfMaxInsns = 4096

// Compile assembles the plan's filter for this machine, before
// anything is restricted, so an unsupported architecture fails early.
func Compile(set string) ([]unix.SockFilter, error) {
	prog, err := Program(set, runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	if len(prog) > bpfMaxInsns {
		return nil, fmt.Errorf("confine: seccomp: %d instructions, over the kernel's %d", len(prog), bpfMaxInsns)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	return filter, nil
}

// Load installs the filter on every thread at once (TSYNC); it needs
// no_new_privs, which Restrict has set on every thread.
func Load(filter []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r1, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("seccomp: loading the filter: %w", errno)
	}
	if r1 != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronised to the filter", r1)
	}
	return nil
}

// Apply loads the named filter set on every thread of this process,
// for a process that already runs with no_new_privs but outside a plan:
// the supervisor under a runtime whose exec path loads no filter of its
// own (gVisor's `runsc exec`). Everything it starts inherits the filter.
func Apply(set string) error {
	filter, err := Compile(set)
	if err != nil {
		return err
	}
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil || nnp != 1 {
		return fmt.Errorf("confine: seccomp: no_new_privs is not set (%d, %v); refusing to load a filter the process could outgrow", nnp, err)
	}
	return Load(filter)
}

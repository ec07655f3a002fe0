// Package runtimes says what a container runtime is, as data: the traits
// the backends act on (does it pass descriptors, is its kernel its own),
// looked up once per sandbox by the runtime's name. No other code branches
// on a runtime's name.
package runtimes

import (
	"path/filepath"
	"slices"
)

// Traits is what a runtime is, as far as the backends care. The zero
// value is a runtime that does nothing the host must allow for (none is).
type Traits struct {
	// Name is the runtime's binary name ("runc"); "" is the daemon's
	// default.
	Name string
	// UserSpaceKernel: the sandbox's processes run on the runtime's own
	// kernel, a user-space process on the host (gVisor), which is charged
	// to the sandbox's cgroup and keeps its own network stack.
	UserSpaceKernel bool
	// PassesFDs: the runtime hands the container extra descriptors
	// (--preserve-fds), so the holder gets its control channel as fd 3.
	PassesFDs bool
	// BindsSocketFile: a Unix socket file bound into the container can be
	// dialled from inside it.
	BindsSocketFile bool
	// PidsCountThreads: the host's pids cgroup counts the runtime's own
	// threads, not the sandbox's processes, so the policy's process limit
	// must be enforced inside (GVisorLimits).
	PidsCountThreads bool
	// SeccompOnExec: a process started by an exec gets the container's
	// seccomp filter; without it the supervisor loads the filter itself.
	SeccompOnExec bool
	// OwnNetworkStack: the runtime makes the container's network itself,
	// so no network namespace is made for it beforehand.
	OwnNetworkStack bool
	// HelpersStartAsRoot: the runtime's /proc/PID/fd lets a process open
	// another's descriptors of the same uid whatever its dumpability
	// (gVisor before release 20251215 checks only the file's own owner and
	// mode), and the standard streams it gives a process are owned by the
	// uid the process starts as. So the holder, supervisor and exporter
	// start as root, with only the capabilities to switch identity
	// (launch.IdentityCaps), and take the sandbox identity themselves
	// (protocol.Identity): their streams stay root's, mode 0600.
	HelpersStartAsRoot bool
	// IgnoresMaskedPaths: the runtime drops the spec's linux.maskedPaths
	// (runsc: its own /proc and /sys need no masking, and it applies the
	// list to nothing else), so a path masked under a mount must be a
	// mount of its own: an empty file bound over a file, an empty
	// read-only tmpfs over a directory (what runc does for the list). A
	// socket, FIFO or device node cannot be mounted over there (gVisor's
	// gofer opens the mount point) nor needs to be: gVisor opens no host
	// FIFO (--host-fifo defaults to none) and no host device (its gofer's
	// own host mount carries the spec's nodev; since 2026-08 only devices
	// the sentry emulates open at all), and connects to a host socket only
	// when BindsSocketFile is made true (SocketFlags): then the oci
	// backend covers each socket to mask on the host, in a view of its
	// mount (oci.coverSockets).
	IgnoresMaskedPaths bool
	// InitOnHost: the container's first process (the holder) is a host
	// process, named by `run --pid-file`; so the oci backend can start it
	// detached and wait for it itself (gVisor's pid file names its kernel).
	InitOnHost bool
	// Flags are the global flags the oci backend gives the runtime.
	Flags []string
	// SocketFlags are global flags with which a Unix socket file bound
	// into the container can be connected to when BindsSocketFile is
	// false: given only to a sandbox that needs one (a network
	// allow-list's proxy).
	SocketFlags []string
}

// native is a runtime whose container is a set of the host kernel's
// namespaces and cgroups (runc, crun, and any runtime not in the table).
var native = Traits{PassesFDs: true, BindsSocketFile: true, SeccompOnExec: true, InitOnHost: true}

// table holds the runtimes that differ from a native one, by the name of
// the runtime's binary or of a Kubernetes RuntimeClass handler.
var table = map[string]Traits{
	// gVisor. It keeps its own network stack, and with --network=none
	// that stack holds only its own loopback (not a namespace it would
	// expect the caller to have configured); --oci-seccomp has it apply
	// the bundle's seccomp filter to the container's first process.
	"runsc": gvisor,
	// gVisor by the name clusters give its RuntimeClass handler (GKE
	// Sandbox's is gvisor; gVisor's own guide says runsc).
	"gvisor": gvisor,
}

// gvisor is gVisor's runsc.
var gvisor = Traits{
	UserSpaceKernel: true, PidsCountThreads: true, OwnNetworkStack: true, HelpersStartAsRoot: true,
	IgnoresMaskedPaths: true,
	Flags:              []string{"--network=none", "--oci-seccomp"},
	// --host-uds=open: connect to host sockets bound into the sandbox and
	// to no other (a bound socket is what runc gives anyway); not create,
	// so nothing inside makes a socket on the host.
	SocketFlags: []string{"--host-uds=open"},
}

// Of returns the traits of the runtime at path (or named so); a runtime
// not in the table is a native one.
func Of(path string) Traits {
	name := ""
	if path != "" {
		name = filepath.Base(path)
	}
	t, ok := table[name]
	if !ok {
		t = native
	}
	t.Name = name
	t.Flags = slices.Clone(t.Flags)
	t.SocketFlags = slices.Clone(t.SocketFlags)
	return t
}

package seccompprofile

import (
	"slices"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Refusal is a group of syscalls every backend refuses, and why.
type Refusal struct {
	Names []string
	Why   string
}

// Refused are the syscalls refused on every backend beyond what the
// upstream default profile refuses: the container profile (docker, oci)
// leaves them out of every allow rule, and the local backend's filter
// denies each one. Upstream's newer default allows some of them outright
// or with a capability or kernel version; an older Docker daemon's own
// default (20.10) refuses them, and the sandbox must be at least as strict
// as the daemon it runs on. No selftest check or probe needs them; add a
// name here only with its reason, and take one out only when a named
// check needs it.
var Refused = []Refusal{
	{Names: []string{"process_vm_readv", "process_vm_writev"},
		Why: "reads or writes another process's memory (our helpers' too) without ptrace"},
	{Names: []string{"name_to_handle_at"},
		Why: "file handles name files by inode, around the mount tree"},
	{Names: []string{"pkey_alloc", "pkey_free", "pkey_mprotect"},
		Why: "memory protection keys: no use in a sandbox, and refused by older Docker defaults"},
	{Names: []string{"mbind", "move_pages", "process_madvise"},
		Why: "NUMA placement and advice on another process's memory: Docker's default needs CAP_SYS_NICE or CAP_SYS_PTRACE for them"},
	{Names: []string{"rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal"},
		Why: "a signal with a sender's own siginfo: a fault queued to the holder (pid 1, a Go program) passes for a real one and crashes it, ending the sandbox; kill and tgkill remain"},
}

// RefusedFcntl is why fcntl(F_SETSIG) is refused on every backend (the
// container profile allows every other fcntl command, the local backend's
// filter denies that one).
const RefusedFcntl = "F_SETSIG makes the kernel's SIGIO for a descriptor any signal, to a process F_SETOWN names: a fault sent so to the holder (pid 1, a Go program, the same identity) passes for a real one and crashes it, ending the sandbox"

// fcntlSyscalls are fcntl(2) and its 32-bit name; FSetSig is F_SETSIG
// (Linux's number on every architecture).
var fcntlSyscalls = []string{"fcntl", "fcntl64"}

const FSetSig = 10

// RefusedNames lists every name in Refused.
func RefusedNames() []string {
	var out []string
	for _, r := range Refused {
		out = append(out, r.Names...)
	}
	return out
}

// withoutRefused is an allow rule without the names of Refused, nil when
// none is left; other rules are returned as they are.
func withoutRefused(sc *seccomp.Syscall) *seccomp.Syscall {
	refused := RefusedNames()
	if sc.Action != specs.ActAllow || !slices.ContainsFunc(sc.Names, func(n string) bool { return slices.Contains(refused, n) }) {
		return sc
	}
	c := *sc
	c.Names = slices.DeleteFunc(slices.Clone(sc.Names), func(n string) bool { return slices.Contains(refused, n) })
	if len(c.Names) == 0 {
		return nil
	}
	return &c
}

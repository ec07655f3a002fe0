package seccompfilter

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

// Rule denies one syscall, always or when its arguments match. The
// filter allows everything no rule denies: the namespaces, Landlock and the
// dropped capabilities are the confinement, and the filter takes away kernel
// surface a sandbox has no use for. A denied call fails with Errno, never a
// kill, so programs can degrade.
type Rule struct {
	Syscall string `json:"syscall"`
	// Errno is what a denied call returns: EPERM, or what a kernel
	// without the feature would say (ENOSYS, EAFNOSUPPORT) where programs
	// fall back on that.
	Errno string `json:"errno"`
	// When lists conditions that must all hold for the rule to deny; an
	// empty list denies every call. Rules for one syscall are tried in
	// order; the first that matches decides.
	When []ArgCond `json:"when,omitempty"`
	Why  string    `json:"why"`
}

// ArgCond tests the low 32 bits of one syscall argument. Every argument the
// rules look at is an int or unsigned int to the kernel (clone's flags too:
// clone(2) keeps only their low half), so the high half is ignored, as the
// kernel ignores it; comparing all 64 bits would let a caller slip past a
// rule by setting high bits (CVE-2019-10063, TIOCSTI).
type ArgCond struct {
	Arg int `json:"arg"` // 0-based
	// Op is "in" (equals one of Values), "not_in" (equals none of them) or
	// "mask_any" (shares a bit with Values[0]).
	Op     string   `json:"op"`
	Values []uint32 `json:"values"`
}

// Filter describes a whole filter, for `render` and reports.
type Filter struct {
	Set string `json:"set"`
	// Arches are the architectures the filter knows; a syscall made
	// through any other ABI (32-bit x86 or arm compat, big-endian)
	// kills the process, since the rules' numbers mean nothing there.
	Arches    []string `json:"arches"`
	OtherArch string   `json:"other_arch"`
	// X32 is what an amd64 syscall with the x32 bit (nr >= 0x40000000)
	// gets: the x32 ABI has its own numbers for the same calls.
	X32     string `json:"x32"`
	Default string `json:"default"`
	Rules   []Rule `json:"rules"`
}

// Linux's values for the constants the rules compare (uapi headers; the same
// on amd64 and arm64). Spelled out because golang.org/x/sys/unix has the
// host OS's values.
const (
	afUnix     = 1
	afInet     = 2
	afInet6    = 10
	afNetlink  = 16
	netlinkRte = 0 // NETLINK_ROUTE

	tiocsti   = 0x5412
	tioclinux = 0x541C

	// cloneNewFlags are every CLONE_NEW* bit clone(2) accepts
	// (CLONE_NEWTIME shares its bit with the exit signal there, so only
	// unshare and clone3 can ask for it; both are denied outright).
	cloneNewFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

	// Personalities Docker's default profile allows: PER_LINUX,
	// PER_LINUX32, UNAME26, both, and the query 0xffffffff. Others turn
	// off ASLR (ADDR_NO_RANDOMIZE), map page zero or make READ imply EXEC.
	perLinux   = 0x0
	perLinux32 = 0x8
	perUname26 = 0x20000
	perBoth    = 0x20008
	perQuery   = 0xffffffff

	// x32SysBit marks an x32 syscall number on amd64 (__X32_SYSCALL_BIT).
	x32SysBit = 0x40000000
)

// seccompDflt names the default (and so far only) rule set.
const seccompDflt = "default"

// errnoNumbers are Linux's numbers for the errnos rules use.
var errnoNumbers = map[string]uint16{"EPERM": 1, "ENOSYS": 38, "EPROTONOSUPPORT": 93, "EAFNOSUPPORT": 97}

// Sets names the rule sets a plan may ask for.
func Sets() []string { return []string{seccompDflt} }

// Seccomp describes the named filter.
func Lookup(set string) (Filter, error) {
	rules, err := RuleSet(set)
	if err != nil {
		return Filter{}, err
	}
	return Filter{
		Set: set, Arches: slices.Sorted(maps.Keys(auditArches)), OtherArch: "kill_process",
		X32: "EPERM", Default: "allow", Rules: rules,
	}, nil
}

func RuleSet(name string) ([]Rule, error) {
	switch name {
	case seccompDflt:
		return defaultRules(), nil
	}
	return nil, fmt.Errorf("unknown seccomp set %q (known: %s)", name, strings.Join(Sets(), ", "))
}

// defaultRules is the deny list: Codex's, sandbox-runtime's, flatpak's and
// Docker's default, consolidated (research/hostile.md §4.2).
func defaultRules() []Rule {
	var rs []Rule
	deny := func(errno, why string, names ...string) {
		for _, n := range names {
			rs = append(rs, Rule{Syscall: n, Errno: errno, Why: why})
		}
	}
	when := func(name, errno, why string, conds ...ArgCond) {
		rs = append(rs, Rule{Syscall: name, Errno: errno, When: conds, Why: why})
	}

	deny("EPERM", "reads or changes another process's memory or file descriptors",
		"ptrace", "kcmp", "pidfd_getfd")
	deny("EPERM", "io_uring: a large kernel surface whose operations seccomp never sees",
		"io_uring_setup", "io_uring_enter", "io_uring_register")
	deny("EPERM", "kernel keyrings are not namespaced: they hold the host user's keys",
		"keyctl", "add_key", "request_key")
	deny("EPERM", "kernel attack surface with no use in a sandbox",
		"bpf", "perf_event_open", "userfaultfd")
	deny("EPERM", "new namespaces would give the sandbox capabilities again, and a way to remount",
		"unshare", "setns")
	when("clone", "EPERM", "clone with a CLONE_NEW* flag creates namespaces; plain clone (threads, fork) stays",
		ArgCond{Arg: 0, Op: "mask_any", Values: []uint32{cloneNewFlags}})
	deny("ENOSYS", "clone3 passes its flags behind a pointer seccomp cannot read; ENOSYS makes libc fall back to clone",
		"clone3")
	deny("EPERM", "changes the mount tree or the root", "mount", "umount2", "pivot_root", "chroot")
	deny("ENOSYS", "the new mount API; ENOSYS makes tools fall back to mount(2), which gets EPERM",
		"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr")
	deny("EPERM", "administers the host kernel or machine",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon",
		"swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog", "settimeofday",
		"clock_settime", "iopl", "ioperm", "lookup_dcookie", "uselib")
	deny("EPERM", "file handles open files by inode, around the mount tree",
		"open_by_handle_at")
	// What every backend refuses beyond Docker's default: the container
	// profile is derived from the same list.
	for _, r := range seccompprofile.Refused {
		deny("EPERM", r.Why, r.Names...)
	}
	when("personality", "EPERM", "only PER_LINUX, PER_LINUX32, UNAME26 and the query; others turn off ASLR",
		ArgCond{Arg: 0, Op: "not_in", Values: []uint32{perLinux, perLinux32, perUname26, perBoth, perQuery}})
	when("socket", "EAFNOSUPPORT",
		"only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK, which the namespaces confine; not AF_VSOCK (reaches the hypervisor), AF_PACKET, AF_ALG and the rest",
		ArgCond{Arg: 0, Op: "not_in", Values: []uint32{afUnix, afInet, afInet6, afNetlink}})
	when("socket", "EPROTONOSUPPORT",
		"netlink only for NETLINK_ROUTE (getifaddrs, getaddrinfo's AI_ADDRCONFIG, ip); the other protocols are kernel surface",
		ArgCond{Arg: 0, Op: "in", Values: []uint32{afNetlink}},
		ArgCond{Arg: 2, Op: "not_in", Values: []uint32{netlinkRte}})
	when("socketpair", "EAFNOSUPPORT", "only AF_UNIX makes socket pairs",
		ArgCond{Arg: 0, Op: "not_in", Values: []uint32{afUnix}})
	when("fcntl", "EPERM", seccompprofile.RefusedFcntl,
		ArgCond{Arg: 1, Op: "in", Values: []uint32{seccompprofile.FSetSig}})
	when("ioctl", "EPERM", "TIOCSTI and TIOCLINUX push input into a terminal the sandbox shares",
		ArgCond{Arg: 1, Op: "in", Values: []uint32{tiocsti, tioclinux}})
	return rs
}

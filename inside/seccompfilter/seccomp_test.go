package seccompfilter

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

// call is one syscall as the filter sees it.
type call struct {
	arch string // GOARCH, or "" for a foreign ABI given by auditArch
	nr   uint32
	args [6]uint64
}

// runFilter runs the assembled program through x/net/bpf's VM. The VM loads
// words big-endian, so seccomp_data is laid out word by word in that order,
// each 64-bit argument's low word first as on the little-endian ABIs: the
// program reads the same values the kernel would give it.
func runFilter(t *testing.T, prog []bpf.RawInstruction, auditArch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	insns, ok := bpf.Disassemble(prog)
	if !ok {
		t.Fatal("program holds instructions the disassembler does not know")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("loading the program into the VM: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNr:], nr)
	binary.BigEndian.PutUint32(data[offArch:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[offArgs+8*i+4:], uint32(a>>32))
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatalf("running the program: %v", err)
	}
	return uint32(ret)
}

func errnoRet(name string) uint32 { return retErrno | uint32(errnoNumbers[name]) }

// commonSyscalls are calls every program makes; the filter must allow them.
var commonSyscalls = map[string]map[string]uint32{
	"amd64": {"read": 0, "write": 1, "close": 3, "mmap": 9, "openat": 257, "futex": 202, "execve": 59,
		"wait4": 61, "getpid": 39, "connect": 42, "bind": 49, "listen": 50, "sendto": 44,
		"getdents64": 217, "exit_group": 231, "rt_sigreturn": 15, "adjtimex": 159},
	"arm64": {"read": 63, "write": 64, "close": 57, "mmap": 222, "openat": 56, "futex": 98, "execve": 221,
		"wait4": 260, "getpid": 172, "connect": 203, "bind": 200, "listen": 201, "sendto": 206,
		"getdents64": 61, "exit_group": 94, "rt_sigreturn": 139, "adjtimex": 171},
}

func TestSeccompUnconditionalRulesDeny(t *testing.T) {
	for arch := range auditArches {
		prog, err := Program("default", arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range defaultRules() {
			nr, ok := syscallNumbers[arch][r.Syscall]
			if len(r.When) > 0 || !ok {
				continue
			}
			if got, want := runFilter(t, prog, auditArches[arch], nr, [6]uint64{}), errnoRet(r.Errno); got != want {
				t.Errorf("%s %s: got %#x, want %#x (%s)", arch, r.Syscall, got, want, r.Errno)
			}
		}
	}
}

// TestSeccompRefusesTheSharedList: the local filter refuses every syscall
// the container profile refuses beyond Docker's default (issue 22,
// finding 10: mbind, move_pages and process_madvise were allowed).
func TestSeccompRefusesTheSharedList(t *testing.T) {
	for arch := range auditArches {
		prog, err := Program("default", arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range seccompprofile.RefusedNames() {
			nr, ok := syscallNumbers[arch][name]
			if !ok {
				t.Errorf("%s %s: not in the syscall table, so not in the filter", arch, name)
				continue
			}
			if got := runFilter(t, prog, auditArches[arch], nr, [6]uint64{}); got != errnoRet("EPERM") {
				t.Errorf("%s %s: got %#x, want EPERM", arch, name, got)
			}
		}
	}
}

func TestSeccompCommonSyscallsAllowed(t *testing.T) {
	for arch, calls := range commonSyscalls {
		prog, err := Program("default", arch)
		if err != nil {
			t.Fatal(err)
		}
		for name, nr := range calls {
			if got := runFilter(t, prog, auditArches[arch], nr, [6]uint64{3, 4, 5}); got != retAllow {
				t.Errorf("%s %s: got %#x, want allow", arch, name, got)
			}
		}
	}
}

func TestSeccompArgumentRules(t *testing.T) {
	const (
		threadFlags = 0x003d0f00 // what glibc and Go pass for a thread
		forkFlags   = 0x01200011 // CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|SIGCHLD
		newUser     = 0x10000000
		newNet      = 0x40000000
		high        = 0x123 << 32
	)
	cases := []struct {
		name    string
		syscall string
		args    [6]uint64
		want    uint32
	}{
		{"thread clone", "clone", [6]uint64{threadFlags}, retAllow},
		{"fork clone", "clone", [6]uint64{forkFlags}, retAllow},
		{"clone with high bits only", "clone", [6]uint64{forkFlags | high}, retAllow},
		{"clone CLONE_NEWUSER", "clone", [6]uint64{forkFlags | newUser}, errnoRet("EPERM")},
		{"clone CLONE_NEWNET", "clone", [6]uint64{newNet}, errnoRet("EPERM")},
		{"clone CLONE_NEWNS", "clone", [6]uint64{0x00020000}, errnoRet("EPERM")},
		{"clone CLONE_NEWCGROUP", "clone", [6]uint64{0x02000000}, errnoRet("EPERM")},
		{"clone3", "clone3", [6]uint64{}, errnoRet("ENOSYS")},
		{"socket AF_UNIX", "socket", [6]uint64{afUnix, 1}, retAllow},
		{"socket AF_INET", "socket", [6]uint64{afInet, 2}, retAllow},
		{"socket AF_INET6", "socket", [6]uint64{afInet6, 1}, retAllow},
		{"socket AF_NETLINK route", "socket", [6]uint64{afNetlink, 3, netlinkRte}, retAllow},
		{"socket AF_NETLINK sock_diag", "socket", [6]uint64{afNetlink, 3, 4}, errnoRet("EPROTONOSUPPORT")},
		{"socket AF_NETLINK route with high bits", "socket", [6]uint64{afNetlink, 3, high}, retAllow},
		{"socket AF_VSOCK", "socket", [6]uint64{40, 1}, errnoRet("EAFNOSUPPORT")},
		{"socket AF_PACKET", "socket", [6]uint64{17, 3}, errnoRet("EAFNOSUPPORT")},
		{"socket AF_ALG", "socket", [6]uint64{38, 5}, errnoRet("EAFNOSUPPORT")},
		{"socket AF_VSOCK with AF_INET high bits", "socket", [6]uint64{40 | afInet<<32}, errnoRet("EAFNOSUPPORT")},
		{"socket AF_INET with high bits", "socket", [6]uint64{afInet | high}, retAllow},
		{"socketpair AF_UNIX", "socketpair", [6]uint64{afUnix, 1}, retAllow},
		{"socketpair AF_INET", "socketpair", [6]uint64{afInet, 1}, errnoRet("EAFNOSUPPORT")},
		{"ioctl TIOCSTI", "ioctl", [6]uint64{0, tiocsti}, errnoRet("EPERM")},
		{"ioctl TIOCSTI with high bits", "ioctl", [6]uint64{0, high | tiocsti}, errnoRet("EPERM")},
		{"ioctl TIOCLINUX", "ioctl", [6]uint64{0, tioclinux}, errnoRet("EPERM")},
		{"ioctl TCGETS", "ioctl", [6]uint64{0, 0x5401}, retAllow},
		{"ioctl FIONREAD", "ioctl", [6]uint64{0, 0x541B}, retAllow},
		{"ioctl TIOCSTI in another argument", "ioctl", [6]uint64{tiocsti, 0x5401}, retAllow},
		{"personality query", "personality", [6]uint64{perQuery}, retAllow},
		{"personality PER_LINUX", "personality", [6]uint64{perLinux}, retAllow},
		{"personality PER_LINUX32", "personality", [6]uint64{perLinux32}, retAllow},
		{"personality ADDR_NO_RANDOMIZE", "personality", [6]uint64{0x0040000}, errnoRet("EPERM")},
		{"personality READ_IMPLIES_EXEC", "personality", [6]uint64{0x0400000}, errnoRet("EPERM")},
		{"mount", "mount", [6]uint64{}, errnoRet("EPERM")},
		{"fsopen", "fsopen", [6]uint64{}, errnoRet("ENOSYS")},
		{"open_tree_attr", "open_tree_attr", [6]uint64{}, errnoRet("ENOSYS")},
		{"unshare CLONE_NEWUSER", "unshare", [6]uint64{newUser}, errnoRet("EPERM")},
		{"ptrace", "ptrace", [6]uint64{16, 1}, errnoRet("EPERM")},
	}
	for arch := range auditArches {
		prog, err := Program("default", arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			nr, ok := syscallNumbers[arch][c.syscall]
			if !ok {
				t.Fatalf("%s: no number for %s", arch, c.syscall)
			}
			if got := runFilter(t, prog, auditArches[arch], nr, c.args); got != c.want {
				t.Errorf("%s %s: got %#x, want %#x", arch, c.name, got, c.want)
			}
		}
	}
}

func TestSeccompForeignABIKilled(t *testing.T) {
	const (
		auditI386 = 0x40000003
		auditARM  = 0x40000028
	)
	amd64, err := Program("default", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	arm64, err := Program("default", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		prog  []bpf.RawInstruction
		arch  uint32
		nr    uint32
		want  uint32
		about string
	}{
		{"i386 read on amd64", amd64, auditI386, 3, retKillProcess, "32-bit x86 numbers differ, and socketcall hides the family"},
		{"arm on arm64", arm64, auditARM, 3, retKillProcess, "compat arm"},
		{"aarch64 on the amd64 filter", amd64, auditArches["arm64"], 63, retKillProcess, "another ABI"},
		{"x86_64 on the arm64 filter", arm64, auditArches["amd64"], 0, retKillProcess, "another ABI"},
		{"x32 read", amd64, auditArches["amd64"], x32SysBit | 0, errnoRet("EPERM"), "x32 bit"},
		{"x32 ptrace", amd64, auditArches["amd64"], x32SysBit | 101, errnoRet("EPERM"), "x32 bit"},
		{"arm64 nr with the x32 bit", arm64, auditArches["arm64"], x32SysBit | 63, retAllow, "no x32 on arm64"},
	}
	for _, c := range cases {
		if got := runFilter(t, c.prog, c.arch, c.nr, [6]uint64{}); got != c.want {
			t.Errorf("%s (%s): got %#x, want %#x", c.name, c.about, got, c.want)
		}
	}
}

func TestSeccompRuleTables(t *testing.T) {
	x86Only := []string{"ioperm", "iopl", "uselib"}
	seenLast := map[string]bool{}
	for _, r := range defaultRules() {
		_, amd := syscallNumbers["amd64"][r.Syscall]
		_, arm := syscallNumbers["arm64"][r.Syscall]
		if !amd || (!arm && !slices.Contains(x86Only, r.Syscall)) {
			t.Errorf("%s: missing from a syscall table (amd64 %v, arm64 %v)", r.Syscall, amd, arm)
		}
		if _, ok := errnoNumbers[r.Errno]; !ok {
			t.Errorf("%s: unknown errno %q", r.Syscall, r.Errno)
		}
		if seenLast[r.Syscall] {
			t.Errorf("%s: a rule follows one that denies every call, so it never applies", r.Syscall)
		}
		if len(r.When) == 0 {
			seenLast[r.Syscall] = true
		}
		if r.Why == "" {
			t.Errorf("%s: rule without a why", r.Syscall)
		}
	}
	if _, err := Program("default", "riscv64"); err == nil {
		t.Error("an architecture without a table must be refused")
	}
	if _, err := Program("lenient", "amd64"); err == nil {
		t.Error("an unknown set must be refused")
	}
	f, err := Lookup("default")
	if err != nil || len(f.Rules) == 0 || f.OtherArch != "kill_process" {
		t.Errorf("Seccomp(default) = %+v, %v", f, err)
	}
}

package seccompprofile

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var (
	refused = Decision{Action: specs.ActErrno, Errno: RefusedErrno}
	eperm   = Decision{Action: specs.ActErrno, Errno: 1}
	allow   = Decision{Action: specs.ActAllow}
)

func resolve(t *testing.T, p *seccomp.Seccomp, tg Target) *specs.LinuxSeccomp {
	t.Helper()
	sc, err := Resolve(p, tg)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func decide(t *testing.T, sc *specs.LinuxSeccomp, name string, args ...uint64) Decision {
	t.Helper()
	d, err := Decide(sc, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNarrowsDockerDefault: the profile allows nothing Docker's default
// refuses, for every architecture the default knows, with and without
// capabilities.
func TestNarrowsDockerDefault(t *testing.T) {
	base := DockerDefault()
	arches := []string{"amd64", "arm64", "s390x", "ppc64le", "riscv64", "loongarch64", "mips64", "mipsel64"}
	for _, arch := range arches {
		for _, caps := range [][]string{nil, {"CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_NET_ADMIN", "CAP_BPF", "CAP_PERFMON"}} {
			for _, k := range []*seccomp.KernelVersion{nil, {Kernel: 4, Major: 4}} {
				if err := Narrows(Profile(), base, Target{Arch: arch, Caps: caps, Kernel: k}); err != nil {
					t.Errorf("%s caps=%v kernel=%v: %v", arch, caps, k, err)
				}
			}
		}
	}
}

// TestNarrowsCatchesWidening: the check itself can fail.
func TestNarrowsCatchesWidening(t *testing.T) {
	tg := Target{Arch: "amd64"}
	widen := func(f func(p *seccomp.Seccomp)) error {
		p := Profile()
		f(p)
		return Narrows(p, DockerDefault(), tg)
	}
	cases := map[string]func(p *seccomp.Seccomp){
		"vsock allowed": func(p *seccomp.Seccomp) {
			p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{"socket"},
				Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: AFVsock, Op: specs.OpEqualTo}}}})
		},
		"mount allowed": func(p *seccomp.Seccomp) {
			p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{Names: []string{"mount"}, Action: specs.ActAllow}})
		},
		"default allow": func(p *seccomp.Seccomp) { p.DefaultAction = specs.ActAllow },
		"a foreign architecture": func(p *seccomp.Seccomp) {
			p.ArchMap[0].SubArches = append(p.ArchMap[0].SubArches, specs.ArchPPC)
		},
	}
	for name, f := range cases {
		if err := widen(f); err == nil {
			t.Errorf("%s: Narrows found nothing", name)
		}
	}
}

// TestSocketFamilies: only the families a network namespace confines are
// created; every other one, AF_VSOCK first, is refused with EAFNOSUPPORT,
// also with high bits set (seccomp compares 64 bits, the kernel reads an
// int) and for families Linux does not define yet.
func TestSocketFamilies(t *testing.T) {
	for _, arch := range ErrnoArches {
		sc := resolve(t, Profile(), Target{Arch: arch})
		for f := uint64(0); f < 2*AFMax; f++ {
			want := refused
			if slices.Contains(AllowedFamilies, f) {
				want = allow
			}
			for _, call := range []string{"socket", "socketpair"} {
				if got := decide(t, sc, call, f, 1, 0); got != want {
					t.Errorf("%s: %s(%d) = %v, want %v", arch, call, f, got, want)
				}
			}
		}
		for _, v := range []uint64{1<<32 | AFVsock, 1<<32 | AFInet, 1 << 63, ^uint64(0)} {
			if got := decide(t, sc, "socket", v); got != refused {
				t.Errorf("%s: socket(%#x) = %v, want %v", arch, v, got, refused)
			}
		}
	}
	// Where libseccomp multiplexes socket rules onto socketcall, refused
	// families get the default EPERM (still refused).
	for _, arch := range []string{"s390x", "ppc64le"} {
		sc := resolve(t, Profile(), Target{Arch: arch})
		if got := decide(t, sc, "socket", AFVsock); got != eperm {
			t.Errorf("%s: socket(AF_VSOCK) = %v, want %v", arch, got, eperm)
		}
		if got := decide(t, sc, "socket", AFInet); got != allow {
			t.Errorf("%s: socket(AF_INET) = %v", arch, got)
		}
		for _, r := range sc.Syscalls {
			if slices.Contains(r.Names, "socket") && r.Action != specs.ActAllow {
				t.Errorf("%s: a socket rule with action %s would collide with libseccomp's socketcall copy", arch, r.Action)
			}
		}
	}
}

// TestNoX86ABIOnAmd64: the 32-bit x86 ABI, whose socketcall(2) would
// create any family, is not in the filter; x32 is.
func TestNoX86ABIOnAmd64(t *testing.T) {
	sc := resolve(t, Profile(), Target{Arch: "amd64"})
	if slices.Contains(sc.Architectures, specs.ArchX86) || !slices.Contains(sc.Architectures, specs.ArchX86_64) ||
		!slices.Contains(sc.Architectures, specs.ArchX32) {
		t.Errorf("architectures %v, want x86_64 and x32 without x86", sc.Architectures)
	}
	def := resolve(t, DockerDefault(), Target{Arch: "amd64"})
	if !slices.Contains(def.Architectures, specs.ArchX86) {
		t.Errorf("Docker's default no longer has x86 (%v): the profile's reason to drop it is gone, revisit", def.Architectures)
	}
	arm := resolve(t, Profile(), Target{Arch: "arm64"})
	if !slices.Equal(arm.Architectures, []specs.Arch{specs.ArchAARCH64, specs.ArchARM}) {
		t.Errorf("arm64 architectures %v", arm.Architectures)
	}
}

// TestOnlySocketRulesChanged: every rule but the socket family rules and
// the fcntl rules is Docker's, less the names of Refused.
func TestOnlySocketRulesChanged(t *testing.T) {
	key := func(r *seccomp.Syscall) string {
		b, _ := json.Marshal(r)
		return string(b)
	}
	var base []string
	for _, r := range DockerDefault().Syscalls {
		if r = withoutRefused(r); r != nil {
			base = append(base, key(r))
		}
	}
	for _, r := range Profile().Syscalls {
		if strings.HasPrefix(r.Comment, "triage-sandbox:") {
			if !slices.Equal(r.Names, []string{"socket", "socketpair"}) && !slices.Equal(r.Names, fcntlSyscalls) {
				t.Errorf("our rule %v is not a socket family rule", r.Names)
			}
			continue
		}
		if !slices.Contains(base, key(r)) {
			if slices.Contains(r.Names, "socketcall") && !slices.Contains(r.Names, "socketpair") {
				continue // the big list, with socketpair taken out
			}
			t.Errorf("rule %v differs from Docker's", r.Names)
		}
	}
}

func TestJSONIsTheProfile(t *testing.T) {
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(JSON()), &p); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(&p)
	b, _ := json.Marshal(Profile())
	if string(a) != string(b) {
		t.Error("JSON() and Profile() differ")
	}
	if strings.ContainsAny(JSON(), "\n\t") {
		t.Error("JSON() is not compact")
	}
}

// TestRefusesTheRefusedList: no rule of the profile allows a syscall of
// Refused, on any architecture, with any capability or kernel version
// (issue 22, findings 10 and 12: process_vm_*, name_to_handle_at, pkey_*
// were allowed where the running Docker's default refuses them).
func TestRefusesTheRefusedList(t *testing.T) {
	arches := []string{"amd64", "arm64", "s390x", "ppc64le", "riscv64"}
	allCaps := []string{"CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_SYS_NICE", "CAP_DAC_READ_SEARCH", "CAP_NET_ADMIN", "CAP_BPF", "CAP_PERFMON"}
	for _, arch := range arches {
		for _, caps := range [][]string{nil, allCaps} {
			sc := resolve(t, Profile(), Target{Arch: arch, Caps: caps, Kernel: &seccomp.KernelVersion{Kernel: 6, Major: 8}})
			for _, name := range RefusedNames() {
				if got := decide(t, sc, name, 0, 0, 0); got.Action == specs.ActAllow {
					t.Errorf("%s caps=%v: %s is allowed", arch, caps, name)
				}
			}
		}
	}
	if len(RefusedNames()) < 9 {
		t.Errorf("the refused list lost names: %v", RefusedNames())
	}
}

// TestRefusesFSetSig: fcntl is allowed for every command but F_SETSIG, on
// every architecture, high bits set or not (the kernel reads an unsigned
// int); Docker's default allows it outright.
func TestRefusesFSetSig(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64", "s390x"} {
		sc := resolve(t, Profile(), Target{Arch: arch})
		for _, name := range fcntlSyscalls {
			for _, cmd := range []uint64{FSetSig, 1<<32 | FSetSig, 0xffffffff00000000 | FSetSig} {
				if got := decide(t, sc, name, 3, cmd, 11); got.Action == specs.ActAllow {
					t.Errorf("%s: %s(3, %#x) is allowed", arch, name, cmd)
				}
			}
			for cmd := uint64(0); cmd < 1100; cmd++ {
				if cmd == FSetSig {
					continue
				}
				if got := decide(t, sc, name, 3, cmd); got.Action != specs.ActAllow {
					t.Fatalf("%s: %s(3, %d) is refused: %s", arch, name, cmd, got)
				}
			}
		}
	}
}

// TestResolvedKernelIsTheProfiles: ResolvedKernel is the newest minKernel
// of any rule, so a kernel at least that new resolves as any later one.
func TestResolvedKernelIsTheProfiles(t *testing.T) {
	var newest seccomp.KernelVersion
	for _, c := range Profile().Syscalls {
		for _, f := range []*seccomp.Filter{c.Includes, c.Excludes} {
			if f == nil || f.MinKernel == nil {
				continue
			}
			if k := *f.MinKernel; k.Kernel > newest.Kernel || (k.Kernel == newest.Kernel && k.Major > newest.Major) {
				newest = k
			}
		}
	}
	if newest != ResolvedKernel {
		t.Errorf("ResolvedKernel is %v, the profile's newest minKernel %v", ResolvedKernel, newest)
	}
}

// TestResolvedOnlyWhereAhead: no resolved profile for a kernel older than
// a rule's minKernel, an unparsed release or an architecture not resolved
// ahead; the caller resolves those itself.
func TestResolvedOnlyWhereAhead(t *testing.T) {
	for _, tc := range []struct {
		arch, release string
		ok            bool
	}{
		{"amd64", "6.1.0-18-amd64", true},
		{"arm64", "4.8", true},
		{"amd64", "4.7.10", false},
		{"amd64", "3.99", false},
		{"amd64", "", false},
		{"amd64", "x.y", false},
		{"s390x", "6.1", false},
	} {
		b, ok := Resolved(tc.arch, tc.release)
		if ok != tc.ok || (ok && len(b) == 0) {
			t.Errorf("Resolved(%q, %q): %v, want %v", tc.arch, tc.release, ok, tc.ok)
		}
	}
}

// TestResolvedIsResolve: each resolved profile is Resolve's, for no
// capabilities and any new kernel, on any OS.
func TestResolvedIsResolve(t *testing.T) {
	for _, arch := range ResolvedArches {
		b, ok := Resolved(arch, "6.1")
		if !ok {
			t.Fatalf("%s: none", arch)
		}
		var got specs.LinuxSeccomp
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		want := resolve(t, Profile(), Target{Arch: arch})
		if d := decide(t, &got, "socket", AFVsock); d != refused {
			t.Errorf("%s: socket(AF_VSOCK) %v, want %v", arch, d, refused)
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(&got)
		if string(wb) != string(gb) {
			t.Errorf("%s: resolved ahead differs from Resolve", arch)
		}
	}
}

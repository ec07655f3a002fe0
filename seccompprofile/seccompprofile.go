// Package seccompprofile is the one seccomp profile every container backend
// applies: Docker's default profile (github.com/moby/profiles/seccomp) with
// socket creation narrowed to the address families a network namespace
// confines. The docker backend hands it to the daemon explicitly
// (SecurityOpt "seccomp=<JSON>"), because a daemon applies its own built-in
// default otherwise, and older engines' defaults allow socket(2) for every
// family, AF_VSOCK included. The oci backend resolves the same JSON into the
// runtime spec.
//
// The profile is generated (go generate) from the moby/profiles default on
// Linux and embedded, so it is the same bytes on every OS that renders it; a
// test fails when the embedded files drift from the library.
package seccompprofile

//go:generate go run gen.go

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Linux address families (include/linux/socket.h). The numbers are Linux's
// on every architecture; they are spelled out here because
// golang.org/x/sys/unix gives the host OS's values, and a profile rendered on
// macOS runs on Linux.
const (
	AFUnix    = 1
	AFInet    = 2
	AFInet6   = 10
	AFNetlink = 16
	AFPacket  = 17
	AFCAN     = 29
	AFTIPC    = 30
	AFBlue    = 31
	AFIUCV    = 32
	AFAlg     = 38
	AFNFC     = 39
	AFVsock   = 40
	AFKCM     = 41
	AFQIPCRTR = 42
	AFSMC     = 43
	AFXDP     = 44
	AFMCTP    = 45
	// AFMax is the first family number Linux does not define (AF_MAX).
	// Families from here on are refused too, so a family added by a newer
	// kernel starts out refused.
	AFMax = 46
)

// AllowedFamilies are the only address families socket(2) and socketpair(2)
// may create inside a sandbox. Each one is confined by the sandbox's network
// namespace, which with NetworkMode none holds only its own loopback:
//
//   - AF_UNIX: pathname sockets reach only what the mounts expose (host
//     sockets under a mount are masked by the policy); abstract sockets are
//     per network namespace.
//   - AF_INET, AF_INET6: the namespace's own interfaces (lo only, or the
//     NAT'd bridge when network is on).
//   - AF_NETLINK: per namespace (route, sock_diag); what reaches every
//     namespace (kernel uevents) is a one-way broadcast, and the global
//     protocols (audit, connector) need capabilities the sandbox lacks.
//   - AF_PACKET: sees only the namespace's interfaces, and needs
//     CAP_NET_RAW, which the sandbox lacks; allowed so tools get the
//     kernel's own EPERM rather than an odd errno.
//
// Everything else is refused, with EAFNOSUPPORT as a kernel without that
// family would answer (on the ErrnoArches; elsewhere with the default
// action's EPERM, see there). In particular (the rest of the list is in
// include/linux/socket.h):
//
//   - AF_VSOCK (40): the host/guest channel of a virtual machine; global
//     across network namespaces unless the host opts in (Linux 7.0), so
//     NetworkMode none does not stop a sandbox on a VM (Firecracker, a
//     cloud guest, Docker Desktop's VM) from talking to the hypervisor.
//   - AF_IUCV (32), AF_SMC (43, SMC-D over s390 ISM): other
//     hypervisor/hardware channels that bypass the namespace.
//   - AF_BLUETOOTH (31), AF_NFC (39), AF_CAN (29), AF_IEEE802154, AF_PHONET,
//     AF_MCTP (45), AF_QIPCRTR (42), AF_ATMPVC, AF_X25, AF_LLC: hardware
//     buses and radios (several exist only in the initial namespace).
//   - AF_KCM (41), AF_XDP (44), AF_TIPC (30), AF_RDS, AF_RXRPC, AF_PPPOX,
//     AF_KEY, AF_ALG (38): namespaced or not, kernel attack surface with no
//     use in a triage sandbox (Docker's default already refuses AF_ALG and
//     AF_VSOCK, with EPERM).
//
// socketcall(2), the multiplexer 32-bit x86 programs use (glibc built for
// kernels before 4.3, Go's 386 port), hides the family behind a pointer
// seccomp cannot read, and libseccomp turns every socket(2) allow rule into
// an unconditional socketcall(SYS_SOCKET) allow for the x86 ABI. So on
// x86_64 the profile leaves the 32-bit x86 ABI out of the filter
// altogether (Docker's default includes it): a 32-bit x86 program is killed
// at its first syscall (the filter's bad-architecture action, which runc
// leaves at libseccomp's default, kill) instead of creating an AF_VSOCK
// socket through socketcall. x32 and arm64's 32-bit
// arm ABI have no socketcall and stay. On s390x and ppc64le the 32-bit
// socketcall path remains as open as in Docker's default.
var AllowedFamilies = []uint64{AFUnix, AFInet, AFInet6, AFNetlink, AFPacket}

// RefusedErrno is what a refused socket family gets: EAFNOSUPPORT.
const RefusedErrno = 97

// ErrnoArches are the host architectures (libseccomp's native names) where
// the profile refuses families with RefusedErrno. Their filters hold no ABI
// with socketcall(2), and EAFNOSUPPORT is 97 on all of them. Elsewhere
// libseccomp copies each socket(2) rule onto socketcall(SYS_SOCKET) without
// the family, so an allow and an errno rule would collide there ("file
// exists" when runc loads the filter); refused families get the default
// action (EPERM) instead.
var ErrnoArches = []string{"amd64", "arm64", "riscv64", "loongarch64"}

// Embedded profiles: ours, and Docker's default it was derived from (kept so
// that tests on any OS can check ours only narrows it).
var (
	//go:embed profile.json
	profileJSON []byte
	//go:embed default.json
	defaultJSON []byte
)

// compactProfile is computed on first use, not at every start of the
// binary (its in-sandbox entries never need it).
var compactProfile = sync.OnceValue(func() string {
	var b bytes.Buffer
	if err := json.Compact(&b, profileJSON); err != nil {
		panic("seccompprofile: embedded profile.json: " + err.Error())
	}
	return b.String()
})

// JSON is the profile in Docker's format, compact: what SecurityOpt's
// "seccomp=" takes. It is unresolved (archMap, rules included or excluded by
// capability, architecture and kernel), so the daemon resolves it for the
// container it creates.
func JSON() string { return compactProfile() }

// Profile decodes the profile.
func Profile() *seccomp.Seccomp { return mustDecode(profileJSON) }

// DockerDefault decodes Docker's default profile as moby/profiles gave it
// when Profile was generated.
func DockerDefault() *seccomp.Seccomp { return mustDecode(defaultJSON) }

func mustDecode(b []byte) *seccomp.Seccomp {
	var p seccomp.Seccomp
	if err := json.Unmarshal(b, &p); err != nil {
		panic("seccompprofile: embedded profile: " + err.Error())
	}
	return &p
}

// Target is what a profile is resolved for: the host's architecture, in
// libseccomp's native names ("amd64", "arm64", "s390x"), the container's
// bounding capabilities, and the kernel (nil: new enough for every rule).
type Target struct {
	Arch   string
	Caps   []string
	Kernel *seccomp.KernelVersion
}

var nativeToSeccomp = map[string]specs.Arch{
	"x86": specs.ArchX86, "amd64": specs.ArchX86_64, "arm": specs.ArchARM, "arm64": specs.ArchAARCH64,
	"loongarch64": specs.ArchLOONGARCH64, "mips64": specs.ArchMIPS64, "mips64n32": specs.ArchMIPS64N32,
	"mipsel64": specs.ArchMIPSEL64, "mips3l64n32": specs.ArchMIPSEL64N32, "mipsel": specs.ArchMIPSEL,
	"ppc": specs.ArchPPC, "ppc64": specs.ArchPPC64, "ppc64le": specs.ArchPPC64LE, "riscv64": specs.ArchRISCV64,
	"s390": specs.ArchS390, "s390x": specs.ArchS390X,
}

// Resolve turns a profile into the runtime-spec filter for t, with the same
// rules as moby/profiles' loader (which is Linux-only and reads the running
// kernel); renderers on Linux use that loader, tests use this on any OS.
func Resolve(p *seccomp.Seccomp, t Target) (*specs.LinuxSeccomp, error) {
	out := p.LinuxSeccomp
	out.Syscalls = nil
	out.Architectures = slices.Clone(p.Architectures)
	if sa, ok := nativeToSeccomp[t.Arch]; ok {
		for _, a := range p.ArchMap {
			if a.Arch == sa {
				out.Architectures = append(append(out.Architectures, a.Arch), a.SubArches...)
				break
			}
		}
	}
	for _, call := range p.Syscalls {
		c := call.LinuxSyscall
		if call.Name != "" {
			if len(c.Names) != 0 {
				return nil, fmt.Errorf("syscall rule has both name %q and names", call.Name)
			}
			c.Names = []string{call.Name}
		}
		if t.applies(call) {
			out.Syscalls = append(out.Syscalls, c)
		}
	}
	return &out, nil
}

// applies: call's Excludes leave t out of none of its terms and its
// Includes take t in on all of them.
func (t Target) applies(call *seccomp.Syscall) bool {
	atLeast := func(v *seccomp.KernelVersion) bool {
		k := t.Kernel
		return k == nil || k.Kernel > v.Kernel || (k.Kernel == v.Kernel && k.Major >= v.Major)
	}
	if ex := call.Excludes; ex != nil {
		if slices.Contains(ex.Arches, t.Arch) ||
			slices.ContainsFunc(ex.Caps, func(c string) bool { return slices.Contains(t.Caps, c) }) ||
			(ex.MinKernel != nil && atLeast(ex.MinKernel)) {
			return false
		}
	}
	if in := call.Includes; in != nil {
		if (len(in.Arches) > 0 && !slices.Contains(in.Arches, t.Arch)) ||
			slices.ContainsFunc(in.Caps, func(c string) bool { return !slices.Contains(t.Caps, c) }) ||
			(in.MinKernel != nil && !atLeast(in.MinKernel)) {
			return false
		}
	}
	return true
}

// Decision is what a filter does with one call.
type Decision struct {
	Action specs.LinuxSeccompAction
	// Errno is the error returned for SCMP_ACT_ERRNO.
	Errno uint
}

func (d Decision) String() string {
	if d.Action == specs.ActErrno {
		return fmt.Sprintf("%s(%d)", d.Action, d.Errno)
	}
	return string(d.Action)
}

// Decide evaluates a resolved filter for one call, the syscall's name and
// its arguments (missing ones are 0). Conditions are compared on the full
// 64-bit value, as libseccomp does. It fails when rules with different
// actions match the same call: the filter would then depend on libseccomp's
// tie-breaking, and this package never relies on that.
func Decide(sc *specs.LinuxSeccomp, name string, args ...uint64) (Decision, error) {
	var a [6]uint64
	copy(a[:], args)
	var got *Decision
	for _, r := range sc.Syscalls {
		if !slices.Contains(r.Names, name) || !matches(r.Args, a) {
			continue
		}
		d := Decision{Action: r.Action}
		if r.Action == specs.ActErrno {
			d.Errno = errnoOr(r.ErrnoRet, sc.DefaultErrnoRet)
		}
		if got != nil && *got != d {
			return Decision{}, fmt.Errorf("%s%v: rules disagree (%s and %s)", name, args, got, d)
		}
		got = &d
	}
	if got != nil {
		return *got, nil
	}
	d := Decision{Action: sc.DefaultAction}
	if d.Action == specs.ActErrno {
		d.Errno = errnoOr(nil, sc.DefaultErrnoRet)
	}
	return d, nil
}

func errnoOr(e, def *uint) uint {
	switch {
	case e != nil:
		return *e
	case def != nil:
		return *def
	}
	return 1 // EPERM, the runtimes' default
}

func matches(conds []specs.LinuxSeccompArg, a [6]uint64) bool {
	for _, c := range conds {
		if c.Index >= uint(len(a)) {
			return false
		}
		v := a[c.Index]
		var ok bool
		switch c.Op {
		case specs.OpNotEqual:
			ok = v != c.Value
		case specs.OpLessThan:
			ok = v < c.Value
		case specs.OpLessEqual:
			ok = v <= c.Value
		case specs.OpEqualTo:
			ok = v == c.Value
		case specs.OpGreaterEqual:
			ok = v >= c.Value
		case specs.OpGreaterThan:
			ok = v > c.Value
		case specs.OpMaskedEqual:
			ok = v&c.Value == c.ValueTwo
		}
		if !ok {
			return false
		}
	}
	return true
}

// Narrows checks that p, resolved for t, allows nothing base does not: the
// same default action, no architecture base lacks, and every call an allow rule
// of p matches is allowed by base as well. An allow rule identical to one of
// base's needs no further check; any other must condition only argument 0,
// and is checked on every boundary value of both profiles' conditions. It
// also checks that p's own rules never disagree about one call.
func Narrows(p, base *seccomp.Seccomp, t Target) error {
	ours, err := Resolve(p, t)
	if err != nil {
		return err
	}
	theirs, err := Resolve(base, t)
	if err != nil {
		return err
	}
	if ours.DefaultAction != theirs.DefaultAction || errnoOr(nil, ours.DefaultErrnoRet) != errnoOr(nil, theirs.DefaultErrnoRet) {
		return fmt.Errorf("default action %s/%d, Docker's is %s/%d", ours.DefaultAction, errnoOr(nil, ours.DefaultErrnoRet),
			theirs.DefaultAction, errnoOr(nil, theirs.DefaultErrnoRet))
	}
	for _, a := range ours.Architectures {
		if !slices.Contains(theirs.Architectures, a) {
			return fmt.Errorf("architecture %s is not in Docker's profile (%v)", a, theirs.Architectures)
		}
	}
	samples := arg0Samples(ours, theirs)
	for _, r := range ours.Syscalls {
		if err := allowedByBase(r, theirs, samples); err != nil {
			return err
		}
	}
	for _, r := range ours.Syscalls {
		for _, name := range r.Names {
			for _, v := range samples {
				if _, err := Decide(ours, name, v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// allowedByBase checks that what allow rule r matches, theirs allows: r
// is one of theirs, or theirs allows its calls outright, or r conditions
// only argument 0 and theirs allows each sample value r matches.
func allowedByBase(r specs.LinuxSyscall, theirs *specs.LinuxSeccomp, samples []uint64) error {
	if r.Action != specs.ActAllow || slices.ContainsFunc(theirs.Syscalls, func(b specs.LinuxSyscall) bool {
		return b.Action == r.Action && sameArgs(b.Args, r.Args) && containsAll(b.Names, r.Names)
	}) {
		return nil
	}
	if allowsOutright(theirs, r.Names) {
		return nil // any condition of ours only narrows it
	}
	if slices.ContainsFunc(r.Args, func(a specs.LinuxSeccompArg) bool { return a.Index != 0 }) {
		return fmt.Errorf("%v: an allow rule on arguments other than the first that Docker's profile lacks", r.Names)
	}
	for _, name := range r.Names {
		for _, v := range samples {
			if !matches(r.Args, [6]uint64{v}) {
				continue
			}
			d, err := Decide(theirs, name, v)
			if err != nil {
				return err
			}
			if d.Action != specs.ActAllow {
				return fmt.Errorf("%s(%d) is allowed, Docker's profile says %s", name, v, d)
			}
		}
	}
	return nil
}

// arg0Samples are the values where some condition on argument 0 changes its
// answer, and their neighbours, plus the extremes and a value with high bits
// set (the kernel truncates socket's int family; seccomp compares 64 bits).
func arg0Samples(scs ...*specs.LinuxSeccomp) []uint64 {
	set := map[uint64]bool{0: true, 1 << 31: true, 1<<32 | AFVsock: true, ^uint64(0): true}
	for v := uint64(0); v <= 2*AFMax; v++ {
		set[v] = true
	}
	for _, sc := range scs {
		for _, r := range sc.Syscalls {
			for _, a := range r.Args {
				if a.Index == 0 {
					for _, v := range []uint64{a.Value, a.ValueTwo} {
						set[v], set[v+1], set[v-1] = true, true, true
					}
				}
			}
		}
	}
	out := make([]uint64, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// allowsOutright reports whether sc allows each of names whatever its
// arguments.
func allowsOutright(sc *specs.LinuxSeccomp, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(sc.Syscalls, func(b specs.LinuxSyscall) bool {
			return b.Action == specs.ActAllow && len(b.Args) == 0 && slices.Contains(b.Names, n)
		}) {
			return false
		}
	}
	return true
}

func sameArgs(a, b []specs.LinuxSeccompArg) bool { return slices.Equal(a, b) }

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

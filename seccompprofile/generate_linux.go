package seccompprofile

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// socketSyscalls are the syscalls that create sockets; Docker's default
// allows socketpair(2) outright and socket(2) per family.
var socketSyscalls = []string{"socket", "socketpair"}

// Generate derives the profile from moby/profiles' DefaultProfile and
// returns it and the default itself, as the JSON embedded in this package
// (`go generate` writes them). Only the socket rules, the 32-bit x86 ABI
// and the names of Refused (taken out of every allow rule) change; every
// other rule is Docker's. It fails, rather than guess, when
// the default's socket rules are not of the shape it knows (an
// unconditional socket(2) allow, or one conditioned on anything but the
// family), and when a family AllowedFamilies lists is one Docker's default
// refuses: the profile only ever narrows the default.
func Generate() (profile, dockerDefault []byte, err error) {
	if dockerDefault, err = json.MarshalIndent(seccomp.DefaultProfile(), "", "\t"); err != nil {
		return nil, nil, err
	}
	p := seccomp.DefaultProfile()
	if err := dropX86(p); err != nil {
		return nil, nil, err
	}
	kept, socketRules, err := splitRules(p.Syscalls)
	if err != nil {
		return nil, nil, err
	}
	if len(socketRules) == 0 {
		return nil, nil, errors.New("default profile has no per-family socket(2) rules; it would allow every family")
	}
	for _, f := range AllowedFamilies {
		if !slices.ContainsFunc(socketRules, func(r *seccomp.Syscall) bool { return matches(r.Args, [6]uint64{f}) }) {
			return nil, nil, fmt.Errorf("family %d is allowed here but refused by Docker's default profile", f)
		}
	}
	p.Syscalls = append(append(kept, familyRules()...), fcntlRules()...)
	if profile, err = json.MarshalIndent(p, "", "\t"); err != nil {
		return nil, nil, err
	}
	return profile, dockerDefault, nil
}

// dropX86 takes x86 out of the sub-architectures of x86_64.
func dropX86(p *seccomp.Seccomp) error {
	dropped := false
	for i, a := range p.ArchMap {
		if a.Arch == specs.ArchX86_64 && slices.Contains(a.SubArches, specs.ArchX86) {
			p.ArchMap[i].SubArches = slices.DeleteFunc(slices.Clone(a.SubArches), func(s specs.Arch) bool { return s == specs.ArchX86 })
			dropped = true
		}
	}
	if !dropped {
		return errors.New("default profile's archMap no longer lists x86 under x86_64")
	}
	return nil
}

// splitRules takes Refused and fcntl out of the default's rules and sets
// its per-family socket(2) rules apart from the rules kept as they are;
// a rule of a shape it does not know is an error.
func splitRules(rules []*seccomp.Syscall) (kept, socketRules []*seccomp.Syscall, err error) {
	for _, sc := range rules {
		if sc.Name != "" {
			return nil, nil, fmt.Errorf("default profile rule %q uses the old name field", sc.Name)
		}
		sc = withoutRefused(sc)
		if sc == nil {
			continue
		}
		if sc, err = withoutFcntl(sc); err != nil {
			return nil, nil, err
		}
		if sc == nil {
			continue
		}
		if !slices.ContainsFunc(sc.Names, func(n string) bool { return slices.Contains(socketSyscalls, n) }) {
			kept = append(kept, sc)
			continue
		}
		plain := sc.Action == specs.ActAllow && sc.Includes == nil && sc.Excludes == nil
		switch {
		case plain && len(sc.Args) == 0 && !slices.Contains(sc.Names, "socket"):
			// socketpair in the big unconditional list: take it out, the
			// family rules below replace it.
			rest := slices.DeleteFunc(slices.Clone(sc.Names), func(n string) bool { return slices.Contains(socketSyscalls, n) })
			if len(rest) > 0 {
				c := *sc
				c.Names = rest
				kept = append(kept, &c)
			}
		case plain && slices.Equal(sc.Names, []string{"socket"}) && len(sc.Args) == 1 && sc.Args[0].Index == 0:
			socketRules = append(socketRules, sc)
		default:
			return nil, nil, fmt.Errorf("default profile has a socket rule of an unknown shape: %+v", sc.LinuxSyscall)
		}
	}
	return kept, socketRules, nil
}

// familyRules allow socket(2) and socketpair(2) for AllowedFamilies and,
// on the ErrnoArches, refuse every other family with RefusedErrno: one
// comparison per rule (runc ORs several comparisons of one argument) and
// no two rules matching the same value. Families at or above AFMax, and
// values with high bits set, fall in the last rule. Elsewhere the refused
// families get the default action's EPERM.
func familyRules() []*seccomp.Syscall {
	names := []string{"socket", "socketpair"}
	errno := uint(RefusedErrno)
	rule := func(action specs.LinuxSeccompAction, op specs.LinuxSeccompOperator, v uint64, comment string) *seccomp.Syscall {
		r := &seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{Names: names, Action: action,
				Args: []specs.LinuxSeccompArg{{Index: 0, Value: v, Op: op}}},
			Comment: comment,
		}
		if action == specs.ActErrno {
			r.ErrnoRet = &errno
			r.Includes = &seccomp.Filter{Arches: ErrnoArches}
		}
		return r
	}
	out := []*seccomp.Syscall{}
	for _, f := range AllowedFamilies {
		out = append(out, rule(specs.ActAllow, specs.OpEqualTo, f, "triage-sandbox: a family the network namespace confines"))
	}
	for f := uint64(0); f < AFMax; f++ {
		if !slices.Contains(AllowedFamilies, f) {
			out = append(out, rule(specs.ActErrno, specs.OpEqualTo, f, "triage-sandbox: family refused"))
		}
	}
	return append(out, rule(specs.ActErrno, specs.OpGreaterEqual, AFMax, "triage-sandbox: family refused"))
}

// withoutFcntl takes fcntl out of Docker's unconditional allow rule (the
// only shape it knows); fcntlRules replace it.
func withoutFcntl(sc *seccomp.Syscall) (*seccomp.Syscall, error) {
	if !slices.ContainsFunc(sc.Names, func(n string) bool { return slices.Contains(fcntlSyscalls, n) }) {
		return sc, nil
	}
	if sc.Action != specs.ActAllow || sc.Includes != nil || sc.Excludes != nil || len(sc.Args) != 0 {
		return nil, fmt.Errorf("default profile has an fcntl rule of an unknown shape: %+v", sc.LinuxSyscall)
	}
	c := *sc
	c.Names = slices.DeleteFunc(slices.Clone(sc.Names), func(n string) bool { return slices.Contains(fcntlSyscalls, n) })
	if len(c.Names) == 0 {
		return nil, nil
	}
	return &c, nil
}

// fcntlRules allow fcntl(2) for every command but F_SETSIG (RefusedFcntl):
// one rule per bit of the command's low 32 bits (the kernel's unsigned int
// cmd), each allowing the commands whose bit differs from F_SETSIG's. Their
// union is every command but F_SETSIG, whatever the high bits hold; one
// comparison per rule, as runc ORs several of one argument.
func fcntlRules() []*seccomp.Syscall {
	var out []*seccomp.Syscall
	for bit := range 32 {
		m := uint64(1) << bit
		out = append(out, &seccomp.Syscall{
			LinuxSyscall: specs.LinuxSyscall{Names: fcntlSyscalls, Action: specs.ActAllow,
				Args: []specs.LinuxSeccompArg{{Index: 1, Value: m, ValueTwo: (FSetSig & m) ^ m, Op: specs.OpMaskedEqual}}},
			Comment: "triage-sandbox: fcntl but F_SETSIG",
		})
	}
	return out
}

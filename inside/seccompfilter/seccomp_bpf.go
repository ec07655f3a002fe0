package seccompfilter

import (
	"fmt"
	"slices"

	"golang.org/x/net/bpf"
)

// Seccomp return values (include/uapi/linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
)

// Action is one action a filter returns, for a probe that asks the kernel
// whether it knows them (SECCOMP_GET_ACTION_AVAIL).
type Action struct {
	Name string
	Ret  uint32
}

// Actions are the actions the filter returns.
func Actions() []Action {
	return []Action{{"kill_process", retKillProcess}, {"errno", retErrno}, {"allow", retAllow}}
}

// Offsets in struct seccomp_data. An argument's low 32 bits sit at its
// offset on the little-endian ABIs the filter accepts.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// Program assembles the named filter for arch (a GOARCH: "amd64" or
// "arm64") into what the kernel loads. Tests run it through a BPF VM.
//
// Layout: check the architecture (kill on any other), on amd64 deny the x32
// range, then one block per syscall that has rules, reached by comparing
// the syscall number, and allow at the end.
func Program(set, arch string) ([]bpf.RawInstruction, error) {
	rules, err := RuleSet(set)
	if err != nil {
		return nil, fmt.Errorf("confine: seccomp: %w", err)
	}
	audit, ok := auditArches[arch]
	if !ok {
		return nil, fmt.Errorf("confine: seccomp: no syscall table for architecture %q", arch)
	}
	var a assembler
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	archOK := a.newLabel()
	a.jump(bpf.JumpEqual, audit, archOK, labelNext)
	a.emit(bpf.RetConstant{Val: retKillProcess})
	a.mark(archOK)
	a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	if arch == "amd64" {
		native := a.newLabel()
		a.jump(bpf.JumpGreaterOrEqual, x32SysBit, labelNext, native)
		a.emit(bpf.RetConstant{Val: retErrno | uint32(errnoNumbers["EPERM"])})
		a.mark(native)
	}
	for _, name := range ruleOrder(rules) {
		nr, ok := syscallNumbers[arch][name]
		if !ok {
			continue // not a syscall on this architecture
		}
		skip := a.newLabel()
		a.jump(bpf.JumpEqual, nr, labelNext, skip)
		if err := a.syscallBlock(name, rules); err != nil {
			return nil, fmt.Errorf("confine: seccomp: %s: %w", name, err)
		}
		a.mark(skip)
	}
	a.emit(bpf.RetConstant{Val: retAllow})
	prog, err := a.assemble()
	if err != nil {
		return nil, fmt.Errorf("confine: seccomp: assembling the %s filter for %s: %w", set, arch, err)
	}
	return prog, nil
}

// ruleOrder lists each syscall once, in the order rules first name it.
func ruleOrder(rules []Rule) []string {
	var names []string
	for _, r := range rules {
		if !slices.Contains(names, r.Syscall) {
			names = append(names, r.Syscall)
		}
	}
	return names
}

// syscallBlock emits one syscall's rules in order; each ends in a return,
// and the block ends by allowing the call no rule matched.
func (a *assembler) syscallBlock(name string, rules []Rule) error {
	for _, r := range rules {
		if r.Syscall != name {
			continue
		}
		errno, ok := errnoNumbers[r.Errno]
		if !ok {
			return fmt.Errorf("unknown errno %q", r.Errno)
		}
		nextRule := a.newLabel()
		for _, c := range r.When {
			if err := a.cond(c, nextRule); err != nil {
				return err
			}
		}
		a.emit(bpf.RetConstant{Val: retErrno | uint32(errno)})
		a.mark(nextRule)
	}
	a.emit(bpf.RetConstant{Val: retAllow})
	return nil
}

// cond emits a test of c that falls through when c holds and jumps to fail
// when it does not.
func (a *assembler) cond(c ArgCond, fail label) error {
	if c.Arg < 0 || c.Arg > 5 || len(c.Values) == 0 {
		return fmt.Errorf("bad condition %+v", c)
	}
	a.emit(bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.Arg), Size: 4})
	switch c.Op {
	case "in":
		hold := a.newLabel()
		last := len(c.Values) - 1
		for _, v := range c.Values[:last] {
			a.jump(bpf.JumpEqual, v, hold, labelNext)
		}
		a.jump(bpf.JumpEqual, c.Values[last], labelNext, fail)
		a.mark(hold)
	case "not_in":
		for _, v := range c.Values {
			a.jump(bpf.JumpEqual, v, fail, labelNext)
		}
	case "mask_any":
		if len(c.Values) != 1 {
			return fmt.Errorf("mask_any takes one mask, got %d", len(c.Values))
		}
		a.jump(bpf.JumpBitsSet, c.Values[0], labelNext, fail)
	default:
		return fmt.Errorf("unknown condition op %q", c.Op)
	}
	return nil
}

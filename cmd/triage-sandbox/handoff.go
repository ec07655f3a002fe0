package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// handOffTarget is the one decision of a hand-over: the program the
// compiled policies' backends are compiled into when this binary lacks
// one of them (their registry entries' Binary), "" when this binary has
// them all. Every command that runs sandboxes (run, exec, selftest, mcp,
// render, policy, check, doctor) asks it, with the policies it compiled.
func handOffTarget(reg *backends.Registry, ps ...*policy.Policy) (backend, binary, howToGet string) {
	for _, p := range ps {
		if p == nil {
			continue
		}
		if bin, how := reg.Elsewhere(p.Backend); bin != "" {
			return p.Backend, bin, how
		}
	}
	return "", "", ""
}

// handOff replaces this process with the program handOffTarget names
// (the kubernetes backend lives in a second binary so client-go costs the
// default one nothing): the same argv and environment, so it compiles the
// same policy and does what was asked. It returns nil when this binary
// has every backend of ps, and a refusal naming how to get the other
// binary when it cannot be found.
func handOff(reg *backends.Registry, ps ...*policy.Policy) error {
	backend, bin, how := handOffTarget(reg, ps...)
	if bin == "" {
		return nil
	}
	self, _ := os.Executable()
	path, err := findSibling(self, bin)
	if err != nil {
		return refuse(fmt.Errorf("backend %s: %v; %s", backend, err, how))
	}
	if err := syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ()); err != nil {
		return refuse(fmt.Errorf("backend %s: starting %s: %v", backend, path, err))
	}
	return nil // not reached
}

// elsewhereDetail is doctor's line for a backend compiled into another
// binary (ok false: name is here): where that binary is and that a run
// for the backend is handed over to it, or how to build it.
func elsewhereDetail(reg *backends.Registry, name, self string) (detail string, ok bool) {
	bin, how := reg.Elsewhere(name)
	if bin == "" {
		return "", false
	}
	path, err := findSibling(self, bin)
	if err != nil {
		return fmt.Sprintf("%v; %s", err, how), true
	}
	return fmt.Sprintf("compiled into %s: `--backend %s` (or [sandbox] backend = %q) hands the run over to it; `%s doctor` checks the cluster",
		path, name, name, bin), true
}

// findSibling finds bin beside self (an install keeps the two together),
// then on PATH. It never finds self: that would hand off forever.
func findSibling(self, bin string) (string, error) {
	var candidates []string
	if self != "" {
		candidates = append(candidates, filepath.Join(filepath.Dir(self), bin))
	}
	if p, err := exec.LookPath(bin); err == nil {
		candidates = append(candidates, p)
	}
	selfInfo, _ := os.Stat(self)
	for _, c := range candidates {
		info, err := os.Stat(c)
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			continue
		}
		if selfInfo != nil && os.SameFile(info, selfInfo) {
			continue
		}
		return c, nil
	}
	return "", errors.New("that backend is compiled into " + bin + ", found neither beside this binary nor on PATH")
}

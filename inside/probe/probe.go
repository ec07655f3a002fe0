// Package probe performs the selftest's actions and reports what happened
// at the errno level. The same static binary runs it inside the sandbox and,
// as the control, on the host, so a probe never depends on the image's tools
// (only the controls about Python, git or a shell use those).
//
// A probe only observes; deciding whether an observation means "blocked" is
// the selftest's job.
package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// The plan and what it sees are messages (package protocol).
type (
	// Step is one action to try.
	Step = protocol.ProbeStep
	// Observation is what a step saw.
	Observation = protocol.ProbeObservation
	// Plan is a list of steps with how to end.
	Plan = protocol.ProbePlan
)

// Execute runs every step and writes one JSON observation per line to out.
// It returns the exit code the process should end with.
func Execute(p Plan, self string, out, errOut io.Writer) int {
	enc := json.NewEncoder(out)
	for _, s := range p.Steps {
		start := time.Now()
		obs := run(s, self)
		obs.Ms = time.Since(start).Milliseconds()
		obs.ID = s.ID
		obs.Detail = excerpt(obs.Detail)
		if err := enc.Encode(obs); err != nil {
			fmt.Fprintf(errOut, "probe: writing observation: %v\n", err)
			return exitcode.Refused
		}
	}
	if p.StderrMarker != "" {
		fmt.Fprintln(errOut, p.StderrMarker)
	}
	return p.ExitCode
}

// ParseObservations reads Execute's output (protocol.ParseProbeObservations).
func ParseObservations(r io.Reader) (map[string]Observation, error) {
	return protocol.ParseProbeObservations(r)
}

// opFunc performs one kind of step; self is this binary, for helpers.
type opFunc func(s Step, self string) Observation

func run(s Step, self string) Observation {
	op, ok := ops[s.Op]
	if !ok {
		return Observation{Errno: "EINVAL", Detail: "unknown op " + s.Op}
	}
	return op(s, self)
}

// errnoName turns an error into its errno's name, or a short text.
func errnoName(err error) string {
	if err == nil {
		return ""
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		if name := errnoNames[en]; name != "" {
			return name
		}
		return fmt.Sprintf("errno %d", int(en))
	}
	if errors.Is(err, os.ErrNotExist) {
		return "ENOENT"
	}
	if errors.Is(err, os.ErrPermission) {
		return "EACCES"
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

var errnoNames = map[syscall.Errno]string{
	syscall.ENOENT: "ENOENT", syscall.EACCES: "EACCES", syscall.EPERM: "EPERM",
	syscall.EROFS: "EROFS", syscall.EXDEV: "EXDEV", syscall.ENETUNREACH: "ENETUNREACH",
	syscall.EHOSTUNREACH: "EHOSTUNREACH", syscall.ECONNREFUSED: "ECONNREFUSED",
	syscall.ETIMEDOUT: "ETIMEDOUT", syscall.ENOSYS: "ENOSYS", syscall.EAGAIN: "EAGAIN",
	syscall.ESRCH: "ESRCH", syscall.EINVAL: "EINVAL", syscall.ENXIO: "ENXIO",
	syscall.ENOTDIR: "ENOTDIR", syscall.EEXIST: "EEXIST", syscall.ENOSPC: "ENOSPC",
	syscall.EADDRNOTAVAIL: "EADDRNOTAVAIL", syscall.EAFNOSUPPORT: "EAFNOSUPPORT",
	syscall.ENOMEM: "ENOMEM", syscall.EBADF: "EBADF", syscall.ENOTSOCK: "ENOTSOCK",
}

// excerpt keeps details short and printable.
func excerpt(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '.'
		}
		return r
	}, s)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

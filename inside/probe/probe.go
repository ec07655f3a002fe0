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
	"sync"
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

// Execute runs every step and writes one JSON observation per line to out:
// the main lane's ("") in order first, with nothing beside them, then the
// other lanes beside one another, each in order; it ends once every lane
// has. It returns the exit code the process should end with.
func Execute(p Plan, self string, out, errOut io.Writer) int {
	w := &obsWriter{enc: json.NewEncoder(out)}
	lanes := splitLanes(p.Steps)
	runLane(lanes[0], self, w)
	var wg sync.WaitGroup
	for _, steps := range lanes[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runLane(steps, self, w)
		}()
	}
	wg.Wait()
	if w.err != nil {
		fmt.Fprintf(errOut, "probe: writing observation: %v\n", w.err)
		return exitcode.Refused
	}
	if p.StderrMarker != "" {
		fmt.Fprintln(errOut, p.StderrMarker)
	}
	return p.ExitCode
}

// splitLanes groups steps by lane, in order: the main lane ("") first,
// then the others in the order of their first step.
func splitLanes(steps []Step) [][]Step {
	lanes := [][]Step{nil}
	index := map[string]int{"": 0}
	for _, s := range steps {
		i, ok := index[s.Lane]
		if !ok {
			i = len(lanes)
			index[s.Lane] = i
			lanes = append(lanes, nil)
		}
		lanes[i] = append(lanes[i], s)
	}
	return lanes
}

// runLane runs steps in order; it stops at the first observation that
// cannot be written.
func runLane(steps []Step, self string, w *obsWriter) {
	for _, s := range steps {
		start := time.Now()
		obs := run(s, self)
		obs.Ms = time.Since(start).Milliseconds()
		obs.ID = s.ID
		obs.Detail = excerpt(obs.Detail)
		if !w.write(obs) {
			return
		}
	}
}

// obsWriter writes whole observation lines from every lane, one at a time,
// and keeps the first error.
type obsWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func (w *obsWriter) write(obs Observation) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.enc.Encode(obs)
	}
	return w.err == nil
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

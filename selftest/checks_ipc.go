package selftest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// ipcSessionChecks reach into the caller's session: its agents and bus,
// a socket under a mount, its terminal.
func ipcSessionChecks() []Check {
	return []Check{
		{ID: "IPC-04", Name: "reach ssh-agent, gpg-agent or the session bus", Category: "ipc",
			Steps: func(e *Env) []probe.Step { return one(step("IPC-04", "unix_connect", nil, e.C.Sockets...)) },
			Judge: okJudge("IPC-04"), Fix: "never mount agent sockets or $XDG_RUNTIME_DIR"},
		{ID: "IPC-06", Name: "reach a host socket inside a mounted directory", Category: "ipc",
			Steps: func(e *Env) []probe.Step { return one(step("IPC-06", "unix_connect", nil, e.C.MountSocket)) },
			Judge: okJudge("IPC-06"), Fix: "unix sockets under a mount must be masked"},
		deepSocketsCheck(),
		{ID: "TTY-01", Name: "inject keystrokes into the terminal", Category: "ipc",
			Steps: func(e *Env) []probe.Step { return one(step("TTY-01", "tiocsti", nil)) },
			Judge: okJudge("TTY-01"), Fix: "never give the sandbox the caller's terminal (no -t)"},
	}
}

// ipcHostChecks reach the host's container runtime and its processes.
func ipcHostChecks() []Check {
	return []Check{
		{ID: "IPC-01", Name: "reach the Docker or containerd socket", Category: "ipc",
			Steps: func(e *Env) []probe.Step {
				return one(step("IPC-01", "unix_connect", nil, append([]string{"/var/run/docker.sock", "/run/docker.sock",
					"/run/containerd/containerd.sock", "/run/podman/podman.sock"}, e.C.RuntimeSockets...)...))
			},
			Judge: okJudge("IPC-01"), Fix: "never mount a runtime socket"},
		{ID: "IPC-05", Name: "signal a host process", Category: "ipc", Requires: []policy.Capability{profiles.CapPidNamespace},
			Steps: func(e *Env) []probe.Step {
				return one(step("IPC-05", "signal", map[string]string{"pid": strconv.Itoa(e.C.SentinelPID())}))
			},
			Judge: okJudge("IPC-05"), Fix: "the sandbox must have its own pid namespace"},
	}
}

// deepSocketsCheck: counting listeners at several depths under the
// checkout; a connection any of them accepts from inside is an escape.
// The control connects to each from the host.
func deepSocketsCheck() Check {
	return Check{ID: "IPC-07", Name: "reach a host socket deep under a mount", Category: "ipc",
		Steps: func(e *Env) []probe.Step {
			return one(step("IPC-07", "unix_connect", map[string]string{"await": "true"}, e.C.DeepSocketPaths()...))
		},
		Judge: deepSocketsJudge,
		Fix:   "every unix socket under a mount, however deep, must be masked"}
}

// deepSocketsJudge: inside, escaped when any listener counted a
// connection; on the host, the control worked when every one did.
func deepSocketsJudge(e *Env, ev *Evidence) (bool, string) {
	var hit, missed []string
	for _, p := range e.C.DeepSocketPaths() {
		if ev.SocketHits[p] > 0 {
			hit = append(hit, strings.TrimPrefix(p, e.C.Checkout+"/"))
		} else {
			missed = append(missed, strings.TrimPrefix(p, e.C.Checkout+"/"))
		}
	}
	sort.Strings(hit)
	if ev.Host {
		if len(missed) > 0 || len(hit) == 0 {
			return false, fmt.Sprintf("not reached from the host: %v (%s)", missed, errnoEvidence(ev.Obs["IPC-07"]))
		}
		return true, fmt.Sprintf("the host reached all %d listeners", len(hit))
	}
	if len(hit) > 0 {
		return true, "accepted from inside: " + strings.Join(hit, ", ")
	}
	return false, fmt.Sprintf("%s; host listeners hit 0 of %d", errnoEvidence(ev.Obs["IPC-07"]), len(missed))
}

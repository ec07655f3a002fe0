package selftest

import (
	"strconv"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/probe"
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

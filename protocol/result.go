package protocol

import (
	"time"

	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Result is how a command ended. A command that ran and exited non-zero is
// a Result, not an error; errors mean the sandbox could not run it. It
// crosses process boundaries (a keeper's result), so it is the protocol's;
// backends.Result names it in the backends' contract.
type Result struct {
	ExitCode  int  `json:"exit_code"`
	Signal    int  `json:"signal,omitempty"`
	TimedOut  bool `json:"timed_out"`
	Canceled  bool `json:"canceled,omitempty"`
	OOMKilled bool `json:"oom_killed"`
	// WholeSandboxOOM: the memory limit ended the whole sandbox, not only a
	// process in it (gVisor's kernel is charged for the command's memory).
	WholeSandboxOOM bool `json:"sandbox_oom_killed,omitempty"`
	// Duration is the command's own run time, from its start to its exit
	// (sandbox start and removal are not in it).
	Duration time.Duration `json:"duration_ns"`
	// Sandbox names what ran it (container id, helper pid, ...).
	Sandbox string `json:"sandbox,omitempty"`
	// CopyBack is what copying the staged writable paths back to the host
	// did after the command; CopyBackError says why it failed (the
	// outputs of this command may be missing on the host).
	CopyBack      *stage.Report `json:"copy_back,omitempty"`
	CopyBackError string        `json:"copy_back_error,omitempty"`
}

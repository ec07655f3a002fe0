// Package runreport is a run's report as one object: what `run --json`
// prints and what the MCP server's run tool returns as structured output.
// Both fill it from the same sandbox.Outcome, so the two never drift.
package runreport

import (
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Report is `run --json`'s one object. The jsonschema tags describe each
// field to an MCP client (the run tool's output schema).
type Report struct {
	ExitCode      int                 `json:"exit_code" jsonschema:"the command's exit code; 124 timed out, 125 refused or failed before it ran (see error), 126 not executable, 127 not found, 128+N killed by signal N"`
	TimedOut      bool                `json:"timed_out" jsonschema:"the command was killed at its timeout"`
	OOMKilled     bool                `json:"oom_killed" jsonschema:"the command was killed for running out of memory"`
	OutputCeiling bool                `json:"output_ceiling" jsonschema:"the command was stopped for printing more than the output ceiling"`
	Signal        int                 `json:"signal,omitempty" jsonschema:"the signal that killed the command, if one did"`
	DurationMS    float64             `json:"duration_ms" jsonschema:"how long the command ran, in milliseconds"`
	Role          profiles.Role       `json:"role,omitempty" jsonschema:"the role it ran in: agent or reproducer"`
	Backend       string              `json:"backend,omitempty" jsonschema:"the sandbox backend that ran it"`
	Config        string              `json:"config" jsonschema:"the triage.toml the policy came from (empty: built-in defaults)"`
	PolicyHash    string              `json:"policy_hash,omitempty" jsonschema:"digest of everything that decided isolation"`
	Gate          sandbox.GateVerdict `json:"gate" jsonschema:"the gate's verdict on the command"`
	Sandbox       string              `json:"sandbox,omitempty" jsonschema:"the sandbox's id"`
	Stdout        string              `json:"stdout" jsonschema:"standard output: secrets redacted, terminal escapes and workflow commands neutralised, capped (head and tail), in whole lines; every line not counted in stdout_stats.changed_lines is byte for byte as printed"`
	Stderr        string              `json:"stderr" jsonschema:"standard error, cleaned and capped as stdout"`
	StdoutBytes   int64               `json:"stdout_bytes" jsonschema:"bytes the command wrote to stdout, before capping"`
	StderrBytes   int64               `json:"stderr_bytes" jsonschema:"bytes the command wrote to stderr, before capping"`
	StdoutStats   output.Stats        `json:"stdout_stats" jsonschema:"what capping left out of stdout"`
	StderrStats   output.Stats        `json:"stderr_stats" jsonschema:"what capping left out of stderr"`
	Truncated     bool                `json:"truncated" jsonschema:"stdout or stderr was cut between head and tail"`
	AuditLog      string              `json:"audit_log,omitempty" jsonschema:"where the run was recorded"`
	// SpecialFiles are what the command left in the outputs that a host
	// reader must not follow or run (symlinks, FIFOs, devices, set-id files,
	// tool configs), with what was done about each.
	SpecialFiles []hostfs.Leftover `json:"special_files" jsonschema:"files the command left in its outputs that must not be followed or run, and what was done about each"`
	// Hints say which sandbox restriction a failure points to.
	Hints []string `json:"hints,omitempty" jsonschema:"which sandbox restriction a failure points to (read-only path, no network, missing tool)"`
	// Warnings are the run's warnings, as printed on stderr.
	Warnings []string `json:"warnings,omitempty" jsonschema:"the run's warnings"`
	// OutputsIncomplete says the outputs were too large to inspect fully.
	OutputsIncomplete string `json:"outputs_incomplete,omitempty" jsonschema:"set when the outputs were too large to inspect fully"`
	// Conflicts are writable files both the host and the command changed:
	// the host's version stays, the command's is kept beside it (kept_as).
	Conflicts []stage.Change `json:"conflicts,omitempty" jsonschema:"writable files both the host and the command changed: the host's version stays, the command's is kept beside it (kept_as)"`
	// CopyBackError says the writable paths were not all copied back
	// (the exit code is then 122 where the command itself exited 0).
	CopyBackError string `json:"copy_back_error,omitempty" jsonschema:"set when the writable paths were not all copied back (exit 122 where the command itself exited 0)"`
	// Weakened are requirements the backend does not enforce and the config accepted.
	Weakened []policy.Capability `json:"weakened,omitempty" jsonschema:"requirements this backend does not enforce and the config accepted"`
	// Network are the network proxy's decisions (a network allow-list).
	Network []egress.Decision `json:"network,omitempty" jsonschema:"with a network allow-list: each connection the command tried, through the host's proxy: host, port, allowed or why not (reason), the entry that allowed it (rule), bytes"`
	Error   string            `json:"error,omitempty" jsonschema:"why triage-sandbox refused or could not run the command (exit_code 125); a denial says not to retry it in another form"`
}

// New is the report of a run of p, before it ran.
func New(p *policy.Policy) *Report {
	if p == nil {
		return &Report{}
	}
	return NewHashed(p, p.Hash())
}

// NewHashed is New with p's Hash already known (a kept compile's).
func NewHashed(p *policy.Policy, hash string) *Report {
	return &Report{Role: p.Role, Backend: p.Backend, PolicyHash: hash, AuditLog: p.AuditLog, Config: p.Config}
}

// Refused records that the command did not run: exit 125 and why,
// neutralised (an error may quote a name the sandbox chose).
func (r *Report) Refused(err error) {
	r.ExitCode, r.Error = exitcode.Refused, output.Text(err.Error())
}

// SetOutcome fills in what a run (sandbox.Run or Session.Exec) returned:
// the gate's verdict and the warnings always; the rest only when runErr
// is nil (the command ran), with its cleaned output.
func (r *Report) SetOutcome(res sandbox.Outcome, runErr error, stdout, stderr string) {
	r.Gate, r.Warnings, r.Network = res.Gate, res.Warnings, res.Network
	if runErr != nil {
		r.Refused(runErr)
		return
	}
	r.Weakened = res.Weakened
	r.SpecialFiles, r.OutputsIncomplete = res.Outputs.Leftovers, res.Outputs.Incomplete
	r.Hints = res.Hints
	r.Conflicts, r.CopyBackError = res.Conflicts, res.CopyBackError
	r.ExitCode, r.TimedOut, r.OOMKilled, r.Signal = sandbox.ExitCode(res.Result), res.TimedOut, res.OOMKilled, res.Signal
	r.OutputCeiling = res.OutputCeiling
	r.DurationMS = float64(res.Duration.Microseconds()) / 1000
	r.Sandbox = res.Sandbox
	r.Stdout, r.Stderr = stdout, stderr
	r.StdoutBytes, r.StderrBytes = res.Stdout.BytesIn, res.Stderr.BytesIn
	r.StdoutStats, r.StderrStats = res.Stdout, res.Stderr
	r.Truncated = res.Stdout.Truncated || res.Stderr.Truncated
}

// Package exitcode names the exit codes triage-sandbox gives (the README's
// contract): `run`'s own, shell-style, which the supervisor, the holder and
// every backend report; `selftest`'s; and `check`'s. Change none of them:
// callers branch on them.
package exitcode

// `run`: the command's own code, or one of these.
const (
	// CopyBackFailed: the command exited 0 but copying its writable paths
	// back to the host did not finish; what it wrote may be partly lost.
	CopyBackFailed = 122
	Timeout        = 124 // killed at its timeout
	Refused        = 125 // triage-sandbox refused or failed before the command ran
	NotExecutable  = 126 // the command exists but cannot be executed
	NotFound       = 127 // the command was not found in the sandbox
	SignalBase     = 128 // killed by signal N: SignalBase + N
)

// Codes of a command killed by a signal, named where the signal has a
// meaning of its own.
const (
	// Killed is SIGKILL's: a lifeline cut, a TTL, an out-of-memory kill
	// (the JSON report says which).
	Killed = SignalBase + 9
	// Interrupted is SIGINT's: what a run canceled by its caller ends with.
	Interrupted = SignalBase + 2
)

// Signaled is the code of a command killed by signal sig.
func Signaled(sig int) int { return SignalBase + sig }

// Failed is the other subcommands' failure (doctor, gc, session end):
// what they checked or did failed, though triage-sandbox itself worked.
const Failed = 1

// `selftest`.
const (
	SelftestPassed      = 0 // every check passed
	SelftestFailed      = 1 // a check failed or was inconclusive
	SelftestUnavailable = 2 // the backend cannot run here
)

// `check`.
const (
	CheckAllowed = 0
	CheckDenied  = 1
	CheckConfirm = 3 // a confirm rule would ask the operator
)

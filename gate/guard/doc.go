// Package guard asks a decision model whether a command may run, as
// ai-triager's guard does: before an agent's command runs, the model scores
// the command, the task and the contents of the scripts it will execute on
// four questions (safe, exfiltration, destructive, injection), and the
// command runs only when safe >= MinSafe and every risk <= MaxRisk.
//
// The guard is fail-closed: an unreachable or slow model, an HTTP error, a
// malformed, partial, oversized or out-of-range answer, a failing command
// transport — anything but a well-formed answer that clears both thresholds
// — gives a blocked Verdict ("guard unavailable: …; not running it"). No
// error path allows; Judge's error only reports cache or log trouble next
// to a verdict that stands on its own.
//
// Where each piece lives:
//   - config.go: Config, defaults, New and its validation.
//   - judge.go: Judge, the threshold decision and the verdict reasons.
//   - prompt.go: the system prompt and the request (user data as JSON).
//   - answer.go: the strict parser of the model's answer.
//   - http.go: the OpenAI-compatible chat-completions transport.
//   - command.go: the external command transport.
//   - cache.go: verdict cache (scores, HMAC-signed, atomic file writes).
//   - log.go: one JSON line per verdict, opened with hostfs.OpenAppend.
//   - scripts.go: CollectScripts, the files a command will run, and
//     CollectScriptsIn, which asks a View of the sandbox where each comes
//     from and refuses a file that may not be the host's copy.
//   - files.go: no-follow, non-blocking file access shared by the above.
//
// The package is for unix hosts, like hostfs.
package guard

package selftest

import (
	"fmt"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
)

// floodBytes is how much filler the output checks print.
const floodBytes = 8 << 20

// floodSecret is the secret the flood prints; the pipeline is told to
// redact it, as it is told the caller's credentials.
func floodSecret(c *Canaries) string { return "flood-" + c.Token }

// outputChecks judge what the output pipeline shows of hostile output: the
// terminal, the model and CI logs must get neither escapes nor workflow
// commands nor the secret, and a bounded amount of it.
func outputChecks() []Check {
	return []Check{
		{ID: "TTY-02", Name: "drive the terminal with escape sequences", Category: "output", Phase: PhaseOutput,
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if i := strings.IndexAny(ev.Shown, "\x1b\x07"); i >= 0 {
					return true, fmt.Sprintf("raw ESC/BEL shown at byte %d", i)
				}
				return false, "escapes shown as pictures (␛ ␇)"
			},
			Fix: "show output through the pipeline (not --raw)"},
		{ID: "TTY-03", Name: "inject GitHub Actions workflow commands", Category: "output", Phase: PhaseOutput,
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				for _, line := range strings.Split(ev.Shown, "\n") {
					if runnerWouldParse(line) {
						return true, "a line the Actions runner parses reached the log: " + oneLine(line, 40)
					}
				}
				return false, "workflow-command lines neutralised (.NET whitespace and the legacy ##[ form included)"
			},
			Fix: "show output through the pipeline (not --raw)"},
		{ID: "RES-05", Name: "flood the output", Category: "output", Phase: PhaseOutput,
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				limit := int(e.P.Output.Limit)
				if len(ev.Shown) > 2*limit+4096 {
					return true, fmt.Sprintf("%d bytes shown for a %d-byte limit", len(ev.Shown), limit)
				}
				if !ev.OutStats.Truncated || ev.OutStats.BytesIn < floodBytes {
					return true, fmt.Sprintf("not flagged as truncated (%d bytes produced)", ev.OutStats.BytesIn)
				}
				return false, fmt.Sprintf("%d of %d bytes shown, truncation flagged", len(ev.Shown), ev.OutStats.BytesIn)
			},
			Fix: "keep [sandbox] output_limit small"},
		{ID: "OUT-06", Name: "start the shown tail inside a token", Category: "output", Phase: PhaseOutput,
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				token := probe.FloodTailToken(floodSecret(e.C))
				tail := ev.Shown
				if ev.Host {
					// The control: the naive cut, the last limit/2 bytes.
					tail = tail[max(0, len(tail)-int(e.P.Output.Limit)/2):]
				} else if i := strings.LastIndex(tail, " omitted ...]\n"); i >= 0 {
					tail = tail[i+len(" omitted ...]\n"):]
				} else {
					return true, "no omission marker: the tail was not cut"
				}
				if partial := leadingPartial(tail, token); partial != "" {
					return true, fmt.Sprintf("the tail starts with %q, the end of a token", oneLine(partial, 20))
				}
				return false, "the tail starts on a token boundary"
			},
			Fix: "show output through the pipeline; the tail must never start inside a token"},
		{ID: "OUT-01", Name: "print a secret into the output", Category: "output", Phase: PhaseOutput,
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				if strings.Contains(ev.Shown, floodSecret(e.C)) {
					return true, "the secret reached the output"
				}
				return false, "shown as <redacted:NAME>"
			},
			Fix: "redaction must see the caller's credentials"},
	}
}

// runnerWouldParse says whether the GitHub Actions runner takes line as a
// workflow command: after String.Trim() (.NET whitespace) it starts with
// "::" and holds a second "::" (TryParseV2's IndexOf("::", 2)), or it
// holds "##[" anywhere (the legacy parser's IndexOf). Written apart from
// the output package, so the check does not grade its own rule.
func runnerWouldParse(line string) bool {
	trimmed := strings.TrimLeftFunc(line, func(r rune) bool {
		switch {
		case r >= 0x09 && r <= 0x0d, r == 0x20, r == 0x85, r == 0xa0, r == 0x1680,
			r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
			return true
		}
		return false
	})
	return strings.HasPrefix(trimmed, "::") && strings.Contains(trimmed[2:], "::") || strings.Contains(line, "##[")
}

// leadingPartial returns the proper suffix of token that text starts with
// (text begins in the middle of a token), or "".
func leadingPartial(text, token string) string {
	for n := len(token) - 1; n > 0; n-- {
		suffix := token[len(token)-n:]
		if strings.HasPrefix(text, suffix) && !strings.HasPrefix(text, token) {
			return suffix
		}
	}
	return ""
}

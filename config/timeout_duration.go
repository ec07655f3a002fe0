package config

import (
	"fmt"
	"time"
)

// Timeouts are bounded: a day is longer than any triage run, and beyond it
// the deadline arithmetic (expiry labels, TTLs, timers) could overflow,
// wrap or turn negative, which means no deadline at all.
const (
	MinTimeoutSeconds = 1
	MaxTimeoutSeconds = 24 * 60 * 60
	// MinTimeout and MaxTimeout are the same bounds as durations.
	MinTimeout = MinTimeoutSeconds * time.Second
	MaxTimeout = MaxTimeoutSeconds * time.Second
)

// timeoutRange is the allowed range as problems and errors state it.
var timeoutRange = fmt.Sprintf("must be between %d and %d seconds (%d hours)", MinTimeoutSeconds, MaxTimeoutSeconds, MaxTimeoutSeconds/3600)

// CheckTimeoutFlag validates the --timeout flag: 0 means the role's
// default; anything else must lie within MinTimeout..MaxTimeout.
func CheckTimeoutFlag(d time.Duration) error {
	if d == 0 || d >= MinTimeout && d <= MaxTimeout {
		return nil
	}
	return fmt.Errorf("--timeout %s: must be between %s and %s (or 0 for the role's default)", d, MinTimeout, MaxTimeout)
}

// TimeoutDuration turns a timeout in seconds (a Timeout field) into a
// duration without overflow. Load and Parse only accept
// MinTimeoutSeconds..MaxTimeoutSeconds; a File built in code may hold
// anything, so the value is clamped to that range rather than multiplied
// blindly (9999999999 * time.Second wraps negative: no deadline at all).
func TimeoutDuration(seconds int) time.Duration {
	return time.Duration(max(MinTimeoutSeconds, min(seconds, MaxTimeoutSeconds))) * time.Second
}

// durationSyntax is how a duration key is written, named for key.
func durationSyntax(key string) string {
	return fmt.Sprintf(`write seconds as an integer (%s = 300) or a duration with a unit ("90s", "5m", "1h30m")`, key)
}

// timeout reads a timeout: seconds within MinTimeoutSeconds..MaxTimeoutSeconds.
func (c *checker) timeout(p []string, v any) *int {
	return secondsIn(MinTimeoutSeconds, MaxTimeoutSeconds, timeoutRange)(c, p, v)
}

// secondsIn reads a duration key as whole seconds within lo..hi (rng says
// so in a problem). It takes what --timeout takes: an integer is seconds,
// as ai-triager's own triage.toml writes [repro] timeout; a string is a Go
// duration ("90s", "5m", "1h30m"). Sub-second parts are refused rather than
// rounded, so the value used is the value written.
func secondsIn(lo, hi int, rng string) parser[*int] {
	return func(c *checker, p []string, v any) *int {
		var d time.Duration
		var got string
		switch x := v.(type) {
		case int64:
			if x < int64(lo) || x > int64(hi) {
				c.add(p, fmt.Sprintf("%s, got %d", rng, x), "")
				return nil
			}
			d = time.Duration(x) * time.Second
		case string:
			parsed, err := time.ParseDuration(x)
			if err != nil {
				c.add(p, quoteShort(x)+" is not a duration", durationSyntax(p[len(p)-1]))
				return nil
			}
			d, got = parsed, quoteShort(x)
		default:
			c.wrongType(p, `an integer of seconds or a duration string ("5m")`, v)
			return nil
		}
		if d < time.Duration(lo)*time.Second || d > time.Duration(hi)*time.Second {
			c.add(p, fmt.Sprintf("%s, got %s", rng, got), "")
			return nil
		}
		if d%time.Second != 0 {
			c.add(p, got+" is not a whole number of seconds", fmt.Sprintf("write e.g. %q", (d.Truncate(time.Second)+time.Second).String()))
			return nil
		}
		n := int(d / time.Second)
		return &n
	}
}

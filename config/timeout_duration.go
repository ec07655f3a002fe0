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

// timeout reads a timeout in seconds: an integer within
// MinTimeoutSeconds..MaxTimeoutSeconds.
func (c *checker) timeout(p []string, v any) *int {
	n, ok := c.integer(p, v)
	if !ok {
		return nil
	}
	if n < MinTimeoutSeconds || n > MaxTimeoutSeconds {
		c.add(p, fmt.Sprintf("%s, got %d", timeoutRange, n), "")
		return nil
	}
	i := int(n)
	return &i
}

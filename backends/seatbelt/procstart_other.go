//go:build !darwin

package seatbelt

import "github.com/triage-sandbox/triage-sandbox/ownership"

// processStart is a process's start time, or "" when it is gone.
func processStart(pid int) string { return ownership.ProcessStart(pid) }

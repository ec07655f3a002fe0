package mcpserver

import (
	"fmt"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// summary is the run's report as the text a model reads (clients that
// ignore structured output see only this): how it ended, the output, and
// what the sandbox has to say about it. Everything in it went through the
// output pipeline or the neutraliser already.
func summary(r *runreport.Report) string {
	var b strings.Builder
	if r.Error != "" {
		b.WriteString("NOT RUN (exit 125): " + r.Error + "\n")
		writeList(&b, "warning", r.Warnings)
		return strings.TrimRight(b.String(), "\n")
	}
	b.WriteString(ending(r) + "\n")
	writeStream(&b, "stdout", r.Stdout, r.StdoutStats.Truncated, r.StdoutStats.OmittedBytes)
	writeStream(&b, "stderr", r.Stderr, r.StderrStats.Truncated, r.StderrStats.OmittedBytes)
	writeList(&b, "hint", r.Hints)
	writeList(&b, "warning", r.Warnings)
	if n := len(r.SpecialFiles); n > 0 {
		fmt.Fprintf(&b, "warning: the command left %d special file(s) in its outputs; never follow or run them (see special_files)\n", n)
	}
	return strings.TrimRight(b.String(), "\n")
}

// ending says how the command ended, in one line.
func ending(r *runreport.Report) string {
	switch {
	case r.TimedOut:
		return fmt.Sprintf("TIMED OUT (exit %d): killed at its timeout after %.1fs, with its whole process tree", r.ExitCode, r.DurationMS/1000)
	case r.OutputCeiling:
		return fmt.Sprintf("STOPPED (exit %d): it printed more than the output ceiling", r.ExitCode)
	case r.OOMKilled:
		return fmt.Sprintf("KILLED (exit %d): out of memory", r.ExitCode)
	case r.Signal != 0:
		return fmt.Sprintf("exit %d (killed by signal %d)", r.ExitCode, r.Signal)
	}
	return fmt.Sprintf("exit %d", r.ExitCode)
}

func writeStream(b *strings.Builder, name, s string, truncated bool, omitted int64) {
	if s == "" {
		return
	}
	fmt.Fprintf(b, "--- %s", name)
	if truncated {
		fmt.Fprintf(b, " (truncated: %d bytes left out between head and tail)", omitted)
	}
	b.WriteString(" ---\n" + s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteString("\n")
	}
}

func writeList(b *strings.Builder, label string, items []string) {
	for _, it := range items {
		b.WriteString(label + ": " + it + "\n")
	}
}

package mcpserver

import (
	"fmt"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/output"
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
	writeStream(&b, "stdout", r.Stdout, r.StdoutStats)
	writeStream(&b, "stderr", r.Stderr, r.StderrStats)
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

// writeStream writes one stream's output under a header that says what was
// left out and how many lines were changed to be shown safely: every other
// line is byte for byte what the command printed, so a test id, a path or
// a name in it can be passed back as it is.
func writeStream(b *strings.Builder, name, s string, st output.Stats) {
	if s == "" {
		return
	}
	fmt.Fprintf(b, "--- %s", name)
	if st.Truncated {
		fmt.Fprintf(b, " (truncated: %d bytes left out between head and tail)", st.OmittedBytes)
	}
	switch st.ChangedLines {
	case 0:
	case 1:
		b.WriteString(" (1 line changed to be shown safely: a workflow command marked, or control characters escaped; every other line is as printed)")
	default:
		fmt.Fprintf(b, " (%d lines changed to be shown safely: workflow commands marked, or control characters escaped; every other line is as printed)", st.ChangedLines)
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

// Package buildversion is the version `triage-sandbox version` prints,
// read from the binary's build information. It lives apart from the CLI
// so the small front binary (cmd/triage-sandbox-front) prints the very
// same line without linking the CLI.
package buildversion

import "runtime/debug"

// String is the module version and, when known, the commit.
func String() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
	}
	return v
}

// Line is what `triage-sandbox version` prints, newline included.
func Line() string { return "triage-sandbox " + String() + "\n" }

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/runreport"
)

// TestJSONNamesTheConfigItRefused: `run --json` refused for the config
// names the file it read in "config" (it said "" although the file was
// found), whether the file is broken or the policy cannot be built from
// it, found from the current directory or given with --config.
func TestJSONNamesTheConfigItRefused(t *testing.T) {
	tests := []struct{ name, toml string }{
		{"a broken value", "[sandbox]\nmemory = 2\n"},
		{"a missing checkout", "[project]\ncheckout = \"../nowhere\"\n"},
		{"a syntax error", "[sandbox\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := workspace(t, tt.toml)
			want := filepath.Join(root, "triage.toml")
			for _, args := range [][]string{
				{"run", "--json", "--", "true"},
				{"run", "--json", "--config", want, "--", "true"},
			} {
				r := runCLI(t, root, nil, args...)
				var out runreport.Report
				if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
					t.Fatalf("%v: --json: %v: %q %q", args, err, r.stdout, r.stderr)
				}
				if r.code != 125 || out.Config != want || out.Error == "" {
					t.Errorf("%v: exit %d, config %q, error %q; want 125, %q", args, r.code, out.Config, out.Error, want)
				}
			}
		})
	}
}

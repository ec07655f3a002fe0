package config

import (
	"slices"
	"testing"
)

// TestHarnessKeyTypos: [project] and [repro] belong to the harness, so a
// key triage-sandbox does not read stays allowed; but one a typo away from
// a key it reads (`chekout`) is a warning with the key it meant, not
// silence. It used to be ignored without a word.
func TestHarnessKeyTypos(t *testing.T) {
	tests := []struct {
		name, toml string
		want       []string
	}{
		{"a typo of checkout", "# ws\n[project]\nchekout = \"../click\"\n",
			[]string{`triage.toml:3: project.chekout: not a key triage-sandbox reads (the harness owns [project]; the value is ignored); did you mean "checkout"?`}},
		{"a typo of python", "[project]\npyhton = \".venv/bin/python\"\n",
			[]string{`triage.toml:2: project.pyhton: not a key triage-sandbox reads (the harness owns [project]; the value is ignored); did you mean "python"?`}},
		{"a typo of timeout", "[repro]\ntimout = 300\n",
			[]string{`triage.toml:2: repro.timout: not a key triage-sandbox reads (the harness owns [repro]; the value is ignored); did you mean "timeout"?`}},
		{"a case slip", "[project]\nCheckout = \"../click\"\n",
			[]string{`triage.toml:2: project.Checkout: not a key triage-sandbox reads (the harness owns [project]; the value is ignored); did you mean "checkout"?`}},
		{"ai-triager's own keys are quiet", "[project]\nname = \"w\"\nrepo = \"o/w\"\ncheckout = \"../w\"\npython = \"python3\"\npackages = [\"w\"]\nclaim_ttl_hours = 3\n[repro]\ntimeout = 120\nbrowse_harness = \"h.py\"\n", nil},
		{"the key itself is set too: not a typo", "[project]\ncheckout = \"../w\"\ncheckouts = [\"a\"]\n", nil},
		{"a longer key of the harness's is no typo", "[project]\npython_version = \"3.12\"\ncheckout_depth = 1\n[repro]\ntimeout_retries = 2\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("triage.toml", []byte(tt.toml), "/ws")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.Warnings, tt.want) {
				t.Errorf("warnings\n %q\nwant\n %q", f.Warnings, tt.want)
			}
		})
	}
}

package holderexec

import (
	"slices"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
)

func TestWithFlags(t *testing.T) {
	tests := []struct {
		name        string
		argv, flags []string
		want        []string
	}{
		{"before the command", []string{"x", "__exec", "--lifeline", "--", "sh", "-c", "--"}, []string{"--seccomp", "default"},
			[]string{"x", "__exec", "--lifeline", "--seccomp", "default", "--", "sh", "-c", "--"}},
		{"no flags", []string{"x", "--", "true"}, nil, []string{"x", "--", "true"}},
		{"no separator", []string{"x"}, []string{"--a"}, []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.argv)
			if got := backends.WithSupervisorFlags(in, tt.flags...); !slices.Equal(got, tt.want) {
				t.Fatalf("WithSupervisorFlags = %q, want %q", got, tt.want)
			}
			if !slices.Equal(in, tt.argv) {
				t.Fatalf("WithSupervisorFlags changed its input: %q", in)
			}
		})
	}
}

func TestSaidLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"  \n ":                  "",
		"runc: oops\n  second  ": ": runc: oops second",
	} {
		if got := SaidLine(in); got != want {
			t.Errorf("SaidLine(%q) = %q, want %q", in, got, want)
		}
	}
}

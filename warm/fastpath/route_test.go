package fastpath

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseRun(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want RunFlags
		ok   bool
	}{
		{"plain", []string{"run", "--", "true"}, RunFlags{}, true},
		{"session", []string{"run", "--session", "s1", "--", "true"}, RunFlags{Session: "s1"}, true},
		{"inline values", []string{"run", "--session=s1", "--role=reproducer", "--", "true"}, RunFlags{Session: "s1", Role: "reproducer"}, true},
		{"pool flags", []string{"run", "--role", "reproducer", "--backend", "local", "--config", "/c/triage.toml", "--", "x"},
			RunFlags{Role: "reproducer", Backend: "local", Config: "/c/triage.toml"}, true},
		// A value that looks like a flag is the value (as cobra reads it).
		{"a value like a flag", []string{"run", "--task", "--role", "--", "true"}, RunFlags{}, true},
		{"bools and unknown flags", []string{"run", "--json", "--raw", "--no-such", "--role", "agent", "--", "true"}, RunFlags{Role: "agent"}, true},
		{"the last wins", []string{"run", "--role", "a", "--role", "b", "--", "true"}, RunFlags{Role: "b"}, true},
		{"after -- is the command", []string{"run", "--", "x", "--session", "s"}, RunFlags{}, true},
		{"no --", []string{"run", "--session", "s1", "true"}, RunFlags{}, false},
		{"no command", []string{"run", "--role", "agent", "--"}, RunFlags{}, false},
		{"a value missing", []string{"run", "--json", "--role"}, RunFlags{}, false},
		{"a command like a flag", []string{"run", "--", "--role"}, RunFlags{}, true},
		{"not run", []string{"check", "--", "true"}, RunFlags{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRun(tt.args)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ParseRun(%q) = %+v, %v; want %+v, %v", tt.args, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestRoutesSeparateWhatPicksAKeeper: a session's route and a pool's, and
// pools' of another role, backend, config or directory, are other files;
// a pool's route names the keeper's front socket, a session's its socket.
func TestRoutesSeparateWhatPicksAKeeper(t *testing.T) {
	dir := t.TempDir()
	runs := []struct {
		cwd string
		r   RunFlags
	}{
		{"/w", RunFlags{Session: "s"}},
		{"/w", RunFlags{}},
		{"/w", RunFlags{Role: "reproducer"}},
		{"/w", RunFlags{Backend: "oci"}},
		{"/w", RunFlags{Config: "/c/triage.toml"}},
		{"/v", RunFlags{}},
	}
	seen := map[string]bool{}
	for _, run := range runs {
		seen[RoutePath(dir, run.cwd, run.r)] = true
	}
	if len(seen) != len(runs) {
		t.Fatalf("%d routes for %d different runs", len(seen), len(runs))
	}
	const k = "0123456789abcdef"
	for _, run := range runs[:2] {
		if err := os.WriteFile(RoutePath(dir, run.cwd, run.r), []byte(k+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if s, err := ReadRoute(dir, "/w", RunFlags{Session: "s"}); err != nil || s != filepath.Join(dir, k+".sock") {
		t.Fatalf("the session's route: %q, %v", s, err)
	}
	if s, err := ReadRoute(dir, "/w", RunFlags{}); err != nil || s != FrontSocket(dir, k) {
		t.Fatalf("the pool's route: %q, %v", s, err)
	}
	if _, err := ReadRoute(dir, "/w", RunFlags{Role: "reproducer"}); err == nil {
		t.Fatal("a route of another role was read")
	}
}

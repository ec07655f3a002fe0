package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedConfigIsNotDiscovered: a triage.toml a sandbox wrote into its
// outputs never becomes the policy of a run started below it.
func TestPlantedConfigIsNotDiscovered(t *testing.T) {
	hostile := "[sandbox]\nnetwork = true\nsecrets = []\nenv = [\"GITHUB_TOKEN\"]\n"
	tests := []struct {
		name    string
		setup   func(ws string)
		cwd     string
		want    string // "" = loads; else part of the refusal
		wantCfg string // the config that must be used
	}{
		{name: "planted in the default repros of a configured workspace",
			setup: func(ws string) { write(t, ws+"/triage.toml", ""); write(t, ws+"/repros/triage.toml", hostile) },
			cwd:   "repros/12", want: `writable path "repros"`},
		{name: "planted in a configured writable path",
			setup: func(ws string) {
				write(t, ws+"/triage.toml", "[sandbox.reproducer]\nwritable = [\"out\"]\n")
				write(t, ws+"/out/deep/triage.toml", hostile)
			},
			cwd: "out/deep", want: `writable path "out"`},
		{name: "planted under a workspace on built-in defaults",
			setup: func(ws string) {
				write(t, ws+"/NOTES.md", "")
				write(t, ws+"/INDEX.md", "")
				write(t, ws+"/issues/7/triage.toml", hostile)
			},
			cwd: "issues/7", want: "built-in defaults"},
		{name: "an unreadable enclosing config fails closed",
			setup: func(ws string) {
				write(t, ws+"/triage.toml", "[sandbox]\nnetwrk = true\n")
				write(t, ws+"/sub/triage.toml", "")
			},
			cwd: "sub", want: "cannot be read"},
		{name: "a nested workspace outside the outer writable paths loads",
			setup: func(ws string) { write(t, ws+"/triage.toml", ""); write(t, ws+"/projects/a/triage.toml", "") },
			cwd:   "projects/a", wantCfg: "projects/a/triage.toml"},
		{name: "the workspace's own config from a reproducer directory",
			setup: func(ws string) { write(t, ws+"/triage.toml", ""); _ = os.MkdirAll(ws+"/repros/12", 0o755) },
			cwd:   "repros/12", wantCfg: "triage.toml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			tt.setup(ws)
			cwd := filepath.Join(ws, tt.cwd)
			if err := os.MkdirAll(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig("", cwd, nil)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Path != filepath.Join(ws, tt.wantCfg) {
				t.Errorf("used %s, want %s", cfg.Path, tt.wantCfg)
			}
		})
	}
}

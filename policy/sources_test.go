package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestReadOnlySourcesOutOfTheWritablePaths: a path the policy mounts
// read-only because the config names it (read_only, the checkout, the
// python environment) must not lie in, or resolve through, any role's
// writable path: a sandbox writes a symlink there (copy-back keeps
// symlinks) and the next run's policy mounted whatever it pointed at,
// any host directory the user can read. A file a sandbox created must
// never change what the next policy grants.
func TestReadOnlySourcesOutOfTheWritablePaths(t *testing.T) {
	elsewhere := t.TempDir() // a host directory the sandbox must not be able to choose
	home := t.TempDir()      // the caller's home, credentials and all
	must(t, os.MkdirAll(filepath.Join(elsewhere, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(elsewhere, "bin", "python"), []byte("#!/bin/sh\n"), 0o755))
	tests := []struct {
		name, toml string
		// plant is what an earlier sandbox left in its outputs.
		plant func(root string)
		want  string
	}{
		{"read_only names a symlink in repros", "[sandbox.reproducer]\nread_only = [\"repros/cache\"]\n",
			func(root string) { must(t, os.Symlink(elsewhere, filepath.Join(root, "repros", "cache"))) },
			`[sandbox] read_only "repros/cache" lies in the writable path repros`},
		{"read_only through a link at the root into repros", "[sandbox.reproducer]\nread_only = [\"cache\"]\n",
			func(root string) {
				must(t, os.Symlink(elsewhere, filepath.Join(root, "repros", "cache")))
				must(t, os.Symlink(filepath.Join(root, "repros", "cache"), filepath.Join(root, "cache")))
			},
			`[sandbox] read_only "cache" lies in the writable path repros`},
		{"read_only in the agent's issues, for the reproducer", "[sandbox.reproducer]\nread_only = [\"issues/data\"]\n",
			func(root string) { must(t, os.Symlink(elsewhere, filepath.Join(root, "issues", "data"))) },
			`[sandbox] read_only "issues/data" lies in the writable path issues`},
		{"the checkout in repros", "[project]\ncheckout = \"repros/click\"\n",
			func(root string) { must(t, os.Symlink(elsewhere, filepath.Join(root, "repros", "click"))) },
			`[project] checkout "repros/click" lies in the writable path repros`},
		{"python in repros", "[project]\npython = \"repros/.venv/bin/python\"\n",
			func(root string) {
				must(t, os.MkdirAll(filepath.Join(root, "repros", ".venv", "bin"), 0o755))
				must(t, os.Symlink(filepath.Join(elsewhere, "bin", "python"), filepath.Join(root, "repros", ".venv", "bin", "python")))
				must(t, os.WriteFile(filepath.Join(root, "repros", ".venv", "pyvenv.cfg"), []byte("home = "+elsewhere+"/bin\n"), 0o644))
			},
			`[project] python "repros/.venv/bin/python" lies in the writable path repros`},
		// Issue 35 item 2, as reported: a real checkout directory in
		// repros (its writes were copied back to the host), and a
		// read_only path a sandbox replaced with a link to the home.
		{"the checkout a directory in repros", "[project]\ncheckout = \"repros/proj\"\n",
			func(root string) { must(t, os.MkdirAll(filepath.Join(root, "repros", "proj", ".git"), 0o755)) },
			`[project] checkout "repros/proj" lies in the writable path repros`},
		{"read_only in repros, a link to the home", "[sandbox]\nread_only = [\"repros/data\"]\n",
			func(root string) { must(t, os.Symlink(home, filepath.Join(root, "repros", "data"))) },
			`[sandbox] read_only "repros/data" lies in the writable path repros`},
		{"a read_only dir outside is fine", "[sandbox.reproducer]\nread_only = [\"" + elsewhere + "\"]\n", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := workspace(t, tt.toml)
			for _, d := range []string{"repros", "issues"} {
				must(t, os.MkdirAll(filepath.Join(cfg.Root, d), 0o755))
			}
			if tt.plant != nil {
				tt.plant(cfg.Root)
			}
			p, err := Build(cfg, profiles.RoleReproducer, fakeHost(t), Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				var mounts []string
				if p != nil {
					for _, m := range p.Mounts {
						mounts = append(mounts, m.Path+" ("+m.Why+")")
					}
				}
				t.Fatalf("err = %v, want %q; mounts %q", err, tt.want, mounts)
			}
		})
	}
}

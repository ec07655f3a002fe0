package main

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyInputsSandboxWritten (issue 35 items 1 and 2), on each
// backend: what an earlier sandbox could have left in a writable path, or
// a pyvenv.cfg naming a credential directory, never chooses what the next
// run reads. A fake home holds a canary in ~/.config/gcloud; the probe
// prints it raw and as the issue's `base64 -w0 | rev`. The control runs
// the probe outside the sandbox (it finds the canary) and inside with a
// clean config (the backend runs, a visible file is printed). Every
// planted case must be refused at load, naming the input and the
// writable path, and print no form of the canary.
func TestPolicyInputsSandboxWritten(t *testing.T) {
	home := t.TempDir()
	credDir := filepath.Join(home, ".config", "gcloud", "legacy_credentials", "me@x.com")
	if err := os.MkdirAll(filepath.Join(credDir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	const secret = `{"refresh_token":"CANARY-35-pyvenv-home"}`
	canary := filepath.Join(credDir, "adc.json")
	if err := os.WriteFile(canary, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	leaked := func(s string) bool {
		return strings.Contains(s, "CANARY-35") || strings.Contains(s, b64) || strings.Contains(s, reverse(b64))
	}
	probe := func(root string) string {
		return "cat " + filepath.Join(root, "visible.txt") + "; cat " + canary + "; base64 -w0 " + canary + " | rev"
	}
	if out, _ := exec.Command("sh", "-c", probe(t.TempDir())).CombinedOutput(); !leaked(string(out)) {
		t.Fatalf("control outside the sandbox: the probe does not find the canary: %q", out)
	}
	venv := func(dir, home string) {
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/usr/bin/python3", filepath.Join(dir, "bin", "python3")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pyvenv.cfg"), []byte("home = "+home+"\ninclude-system-site-packages = false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	venv(filepath.Join(outside, "venv"), filepath.Join(credDir, "bin"))
	tests := []struct {
		name, config string
		plant        func(root string)
		want         string // in stderr's refusal; "" for the control
	}{
		{"control", "", nil, ""},
		{"python in repros, pyvenv.cfg naming the credentials", "[project]\npython = \"repros/.venv/bin/python3\"\n",
			func(root string) { venv(filepath.Join(root, "repros", ".venv"), filepath.Join(credDir, "bin")) },
			`lies in the writable path repros`},
		{"the maintainer's venv naming the credentials", "[project]\npython = \"" + filepath.Join(outside, "venv", "bin", "python3") + "\"\n",
			nil, `lies in the unreadable path ` + filepath.Join(home, ".config", "gcloud")},
		{"checkout in repros", "[project]\ncheckout = \"repros/proj\"\n",
			func(root string) {
				if err := os.MkdirAll(filepath.Join(root, "repros", "proj"), 0o755); err != nil {
					t.Fatal(err)
				}
			}, `[project] checkout "repros/proj" lies in the writable path repros`},
		{"read_only in repros, a link to the home", "[sandbox]\nread_only = [\"repros/data\"]\n",
			func(root string) {
				if err := os.Symlink(home, filepath.Join(root, "repros", "data")); err != nil {
					t.Fatal(err)
				}
			}, `[sandbox] read_only "repros/data" lies in the writable path repros`},
	}
	for _, backend := range runnableBackends(t) {
		for _, tt := range tests {
			t.Run(backend+"/"+tt.name, func(t *testing.T) {
				root := workspace(t, tt.config)
				if err := os.MkdirAll(filepath.Join(root, "repros"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "visible.txt"), []byte("VISIBLE-35\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if tt.plant != nil {
					tt.plant(root)
				}
				r := runCLI(t, root, []string{"HOME=" + home}, "run", "--role", "reproducer", "--backend", backend, "--", "sh", "-c", probe(root))
				if leaked(r.stdout + r.stderr) {
					t.Fatalf("the canary reached the output: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
				}
				if tt.want == "" {
					if !strings.Contains(r.stdout, "VISIBLE-35") {
						t.Fatalf("control: the sandbox did not print the visible file: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
					}
					return
				}
				if r.code != 125 || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stdout, "VISIBLE-35") {
					t.Fatalf("want a refusal (125) naming %q and nothing run: exit %d\nstdout %q\nstderr %q", tt.want, r.code, r.stdout, r.stderr)
				}
			})
		}
	}
}

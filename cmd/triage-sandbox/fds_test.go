package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestCallersDescriptorsDoNotReachTheCommand: a caller that holds
// descriptors without close-on-exec (fd 7 appending to a host file outside
// every writable path, fd 8 reading a credential) must not hand them to
// the sandboxed command, on any backend. The control run is the same
// command outside the sandbox, which must reach both.
func TestCallersDescriptorsDoNotReachTheCommand(t *testing.T) {
	testenv.SkipShort(t, "runs sandboxes")
	const secret = "canary-key-6f1d2c9e"
	script := `cat <&8 2>/dev/null; echo wrote >&7 2>/dev/null; ls /proc/self/fd`
	for _, backend := range runnableBackends(t) {
		t.Run(backend, func(t *testing.T) {
			ws := t.TempDir()
			if err := os.Chmod(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			host := filepath.Join(t.TempDir(), "host.log")
			cred := filepath.Join(t.TempDir(), "id_ed25519")
			if err := os.WriteFile(cred, []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			run := func(args ...string) string {
				w, err := os.OpenFile(host, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				r, err := os.Open(cred)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Dir = ws
				cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir(t))
				// ExtraFiles land at 3+i without close-on-exec, as a harness's would.
				cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, w, r}
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				_ = cmd.Run()
				return out.String()
			}
			if out := run("sh", "-c", script); !strings.Contains(out, secret) {
				t.Fatalf("control: the caller's descriptor 8 did not reach a child outside the sandbox: %q", out)
			}
			_ = os.Truncate(host, 0)
			out := run(testenv.Binary(t), "run", "--backend", backend, "--", "sh", "-c", script)
			if strings.Contains(out, secret) || strings.Contains(reverse(out), secret) {
				t.Errorf("the command read the caller's descriptor 8: %q", out)
			}
			if b, _ := os.ReadFile(host); len(b) > 0 {
				t.Errorf("the command wrote the host file through the caller's descriptor 7: %q", b)
			}
			for _, f := range strings.Fields(out) {
				if f == "7" || f == "8" {
					t.Errorf("the command holds descriptor %s: %q", f, out)
				}
			}
		})
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// runnableBackends are the Linux backends that can run here: local as
// root, oci with runc as root, docker with a daemon (required in CI).
func runnableBackends(t *testing.T) []string {
	t.Helper()
	var out []string
	if os.Geteuid() == 0 {
		out = append(out, "local")
		if _, err := exec.LookPath("runc"); err == nil {
			out = append(out, "oci")
		}
	}
	testenv.RequireDocker(t)
	return append(out, "docker")
}

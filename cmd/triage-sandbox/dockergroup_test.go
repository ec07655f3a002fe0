package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestDockerSocketRefusedSaysJoinTheGroup: a user outside the socket's
// group (nobody here, against the running daemon's root:docker 0660
// socket) is told the daemon runs and refuses them, to join the group or
// use --backend local; it used to be told to start the daemon.
func TestDockerSocketRefusedSaysJoinTheGroup(t *testing.T) {
	testenv.RequireRoot(t, "runs the CLI as nobody")
	testenv.RequireDocker(t)
	const sock = "/var/run/docker.sock"
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm()&0o006 != 0 {
		t.Skipf("%s is not a socket others are refused (%v)", sock, err)
	}
	// A directory nobody can reach: t.TempDir's parent is 0700.
	dir, err := os.MkdirTemp("", "dockergroup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "triage-sandbox")
	copyFile(t, testenv.Binary(t), bin, 0o755)
	for _, args := range [][]string{{"run", "--", "true"}, {"doctor"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "DOCKER_HOST=unix://" + sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run()
		got := out.String()
		for _, w := range []string{"the daemon is running but refuses you its socket", "uid 65534 is not in it", "--backend local"} {
			if !strings.Contains(got, w) {
				t.Errorf("%s: output lacks %q:\n%s", args[0], w, got)
			}
		}
		if strings.Contains(got, "start it (systemctl") {
			t.Errorf("%s: still told to start a running daemon:\n%s", args[0], got)
		}
		for _, line := range strings.Split(got, "\n") {
			if strings.Contains(line, "permission denied") && !strings.Contains(line, "--backend local") {
				t.Errorf("%s: a refusal without its fix: %s", args[0], line)
			}
		}
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

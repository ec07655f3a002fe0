package sandboxinit_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestCommandCannotReachItsSupervisor: the command runs as the
// supervisor's identity; it must not read the supervisor's descriptors
// through /proc (nor attach to it: the same dumpable flag guards both).
// The control is the command's own /proc entry, which it can read.
func TestCommandCannotReachItsSupervisor(t *testing.T) {
	testenv.RequireRoot(t, "to run the supervisor as another identity")
	argv := protocol.MustArgv(readableBinary(t), protocol.EntryExec, protocol.Exec{
		Argv: []string{"sh", "-c", `ls /proc/$$/fd >/dev/null && echo control-ok; ls /proc/$PPID/fd && echo reached-supervisor; true`}})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if !strings.Contains(out.String(), "control-ok") {
		t.Fatalf("control: the command could not read its own /proc entry: %q", out.String())
	}
	if strings.Contains(out.String(), "reached-supervisor") {
		t.Fatalf("the command read its supervisor's descriptors: %q", out.String())
	}
}

// readableBinary is the test binary where another identity may run it.
func readableBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandboxinit-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(testenv.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "triage-sandbox")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

package sandboxinit_test

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestSupervisorTakesItsIdentity: a supervisor started as root with an
// identity to take (as under gVisor) runs itself and its command as that
// identity, with no group and no capability in any set; one that cannot
// take it (started without the capabilities) refuses to run anything.
func TestSupervisorTakesItsIdentity(t *testing.T) {
	testenv.RequireRoot(t, "to start the supervisor as root")
	bin := readableBinary(t)
	status := `for p in $PPID $$; do grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)):' /proc/$p/status; done`
	spec := protocol.Exec{Argv: []string{"sh", "-c", status}, RunAs: &protocol.Identity{UID: 65534, GID: 65533}}
	argv := protocol.MustArgv(bin, protocol.EntryExec, spec)
	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(out.String(), string(rune(protocol.ExecStarted)))), "\n")
	if len(lines) != 2*8 {
		t.Fatalf("want the status of the supervisor and its command, got %q", out.String())
	}
	for _, line := range lines {
		k, v, _ := strings.Cut(line, ":")
		v = strings.Join(strings.Fields(v), " ")
		want := map[string]string{"Uid": "65534 65534 65534 65534", "Gid": "65533 65533 65533 65533", "Groups": ""}[k]
		if strings.HasPrefix(k, "Cap") {
			want = "0000000000000000"
		}
		if v != want {
			t.Errorf("%s: %q, want %q", k, v, want)
		}
	}

	// Started without the capabilities to switch: nothing runs.
	out.Reset()
	cmd = exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil || strings.Contains(out.String(), "Uid") || !strings.Contains(out.String(), "taking the sandbox identity") {
		t.Fatalf("a supervisor that could not take its identity ran the command: %v: %q", err, out.String())
	}
}

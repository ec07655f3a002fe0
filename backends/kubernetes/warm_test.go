//go:build linux

package kubernetes

import (
	"strings"
	"testing"
	"time"
)

// TestSessionAndPoolOnNode: `run --session` keeps one pod between runs
// (its scratch persists, held by the keeper), and `pool = 1` gives each
// reproducer run a fresh pooled pod; `session end` removes them, and
// nothing of ours is left in the namespace (restrictedNamespace's
// cleanup).
func TestSessionAndPoolOnNode(t *testing.T) {
	e := cliWorkspace(t, "", "pool = 1\n")
	run := func(args ...string) string {
		t.Helper()
		out, errOut, err := e.run(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, errOut)
		}
		return out
	}
	run("run", "--role", "agent", "--session", "s1", "--", "sh", "-c", "echo kept > $HOME/note")
	if out := run("run", "--role", "agent", "--session", "s1", "--", "sh", "-c", "cat $HOME/note; hostname"); !strings.HasPrefix(out, "kept\n") {
		t.Errorf("the session's second run saw %q, want its first run's file", out)
	}
	first := run("run", "--role", "reproducer", "--", "sh", "-c", "ls $HOME; touch $HOME/mark; cat /proc/sys/kernel/random/boot_id >/dev/null; echo ok")
	second := run("run", "--role", "reproducer", "--", "sh", "-c", "ls $HOME; echo ok")
	if strings.Contains(second, "mark") || first != "ok\n" && !strings.HasSuffix(first, "ok\n") {
		t.Errorf("pooled runs: %q then %q; each must start fresh", first, second)
	}
	list := run("session", "list")
	if !strings.Contains(list, "s1") || !strings.Contains(list, "pool:reproducer") || !strings.Contains(list, "kubernetes") {
		t.Errorf("session list:\n%s", list)
	}
	run("session", "end", "s1")
	run("session", "end", "pool:reproducer")
	if list := run("session", "list"); strings.Contains(list, "s1") || strings.Contains(list, "pool:") {
		t.Errorf("still listed after session end:\n%s", list)
	}
	e.awaitEmpty(t, 90*time.Second)
}

// TestDoctorOnNode: doctor, for a config that chose the kubernetes
// backend, names the API server and shows what the cluster gives (the
// namespace's Pod Security level) and what it cannot tell, and says each
// role is ready in its accepted weaker mode.
func TestDoctorOnNode(t *testing.T) {
	e := cliWorkspace(t, "", "")
	out, errOut, err := e.run("doctor")
	for _, want := range []string{
		"kubernetes: engine", "Kubernetes v1.34.3 at https://127.0.0.1:",
		"restricted Pod Security in " + e.ns, "enforce: restricted",
		"NetworkPolicy enforcement", "kubernetes for agent", "kubernetes for reproducer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s%s", want, out, errOut)
		}
	}
	// Other backends this machine lacks may fail doctor; ours must not.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL") && strings.Contains(line, "kubernetes") {
			t.Errorf("doctor: %s (%v)", line, err)
		}
	}
}

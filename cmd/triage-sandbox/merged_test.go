package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestMergedStreamsWholeLines: run's stdout and stderr are one pipe (a CI
// step's log, 2>&1), and the command interleaves partial lines on both.
// Each stream writes whole lines, so every line of the pipe is one line
// the neutraliser judged from its start: no workflow command forms across
// the streams, and ids with "::" come back as printed, on lines of their
// own.
func TestMergedStreamsWholeLines(t *testing.T) {
	testenv.RequireDocker(t)
	root := workspace(t, "[project]\ncheckout = \"../widgets\"\n")
	script := strings.Join([]string{
		`printf 'text ##'`, `sleep 0.3`, `printf '[add-mask]x\n' >&2`, `sleep 0.3`,
		`printf '   '`, `sleep 0.3`, `printf '::add-mask::y\n' >&2`, `sleep 0.3`,
		`printf ' end\n'`, `printf 'tests/x.py::test_y PASSED\n'`, `printf '::1 localhost\n'`,
		`printf '::warning::w\n' >&2`, `printf 'no newline ##'`, `printf '[add-mask]z' >&2`,
	}, "; ")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testenv.Binary(t), "run", "--role", "reproducer", "--", "sh", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir(t))
	cmd.Stdout, cmd.Stderr = w, w
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()
	runErr := cmd.Run()
	w.Close()
	out := <-read
	if runErr != nil {
		t.Fatalf("%v\n%s", runErr, out)
	}
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		trimmed := strings.TrimLeft(l, " \t")
		if strings.HasPrefix(trimmed, "::") && strings.Contains(trimmed[2:], "::") || strings.Contains(l, "##[") {
			t.Errorf("the runner would parse %q from the merged log:\n%s", l, out)
		}
	}
	for _, want := range []string{"tests/x.py::test_y PASSED", "::1 localhost", "text ##    end",
		"[workflow command neutralised] ::warning::w", "no newline ##"} {
		if !hasLine(lines, want) {
			t.Errorf("no line %q in the merged log:\n%s", want, out)
		}
	}
}

func hasLine(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

//go:build linux

package main

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The forked copy exits at once with status 0, and the parent goes on.
func TestForkExitChildExitsAtOnce(t *testing.T) {
	pid, err := forkExit()
	if err != nil {
		t.Fatal(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("the child ended with %v, want exit 0", ws)
	}
}

// A program that cannot start is no figure; one that can is in the line.
func TestMeasure(t *testing.T) {
	if _, err := measure(2, "/nonexistent/empty-go"); err == nil {
		t.Fatal("a missing program gave a figure")
	}
	line, err := measure(2, "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"page fault", "fork", "exec of /bin/true", "empty static Go program"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
}

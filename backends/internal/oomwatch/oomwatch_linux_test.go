//go:build linux

package oomwatch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/cgroupfs"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// memoryCgroup makes a child of this process's memory cgroup limited to
// 32 MiB, removed at the end of the test.
func memoryCgroup(t *testing.T) cgroupfs.Dir {
	t.Helper()
	testenv.RequireRoot(t, "to make a memory cgroup")
	own, err := cgroupfs.ControllerDir(os.Getpid(), "memory")
	if err != nil {
		t.Skip(err)
	}
	dir := cgroupfs.Dir{Path: filepath.Join(own.Path, fmt.Sprintf("oomwatch-test-%d-%d", os.Getpid(), time.Now().UnixNano())), V2: own.V2}
	if err := os.Mkdir(dir.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(dir.Path) })
	limit := "memory.limit_in_bytes"
	if dir.V2 {
		limit = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(dir.Path, limit), []byte("33554432"), 0); err != nil {
		t.Fatal(err)
	}
	if !dir.V2 {
		// No swap to escape into, where the kernel accounts it.
		_ = os.WriteFile(filepath.Join(dir.Path, "memory.memsw.limit_in_bytes"), []byte("33554432"), 0)
	}
	return dir
}

// runIn runs sh -c script with the shell first moved into dir.
func runIn(t *testing.T, dir cgroupfs.Dir, script string) error {
	t.Helper()
	return exec.Command("sh", "-c", `echo $$ > "$0/cgroup.procs" && `+script, dir.Path).Run()
}

func counter(t *testing.T, dir cgroupfs.Dir) Counter {
	t.Helper()
	var c Counter
	if dir.V2 {
		c = &v2{events: filepath.Join(dir.Path, "memory.events")}
	} else {
		w, err := watchV1(dir.Path)
		if err != nil {
			t.Fatal(err)
		}
		c = w
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestCountsKillsAndNotRemoval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		kills  bool
	}{
		// dd holds its whole block in memory: 256 MiB against 32.
		{"over the limit", "exec dd if=/dev/zero of=/dev/null bs=256M count=1", true},
		{"under the limit", "exec dd if=/dev/zero of=/dev/null bs=1M count=1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := memoryCgroup(t)
			c := counter(t, dir)
			if n := c.Kills(0); n != 0 {
				t.Fatalf("a new cgroup has %d kills", n)
			}
			err := runIn(t, dir, tc.script)
			alive := c.Kills(0)
			if got := alive > 0; got != tc.kills {
				t.Fatalf("kills while the cgroup exists = %d (command: %v), want kills %v", alive, err, tc.kills)
			}
			// The removal is signalled too: it must not count as a kill.
			if err := os.Remove(dir.Path); err != nil {
				t.Fatal(err)
			}
			if gone := c.Kills(time.Second); gone != alive {
				t.Fatalf("kills after removal = %d, want %d", gone, alive)
			}
		})
	}
}

// The kill and the removal both arrive before the first read: the sandbox
// (gVisor's kernel) was OOM-killed and its runtime removed the cgroup.
func TestKillThenRemovalBeforeTheRead(t *testing.T) {
	dir := memoryCgroup(t)
	if dir.V2 {
		t.Skip("v2 keeps no count once the cgroup is removed")
	}
	c := counter(t, dir)
	_ = runIn(t, dir, "exec dd if=/dev/zero of=/dev/null bs=256M count=1")
	if err := os.Remove(dir.Path); err != nil {
		t.Fatal(err)
	}
	if n := c.Kills(time.Second); n != 1 {
		t.Fatalf("kills = %d, want 1", n)
	}
}

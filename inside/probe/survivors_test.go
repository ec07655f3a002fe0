//go:build linux

package probe

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestSleepersWithTokenTable: only a live helper whose argv is exactly a
// "sleep TOKEN" counts, not a process quoting the token nor a zombie.
func TestSleepersWithTokenTable(t *testing.T) {
	proc := t.TempDir()
	add := func(pid int, argv []string, state string) {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var cmdline []byte
		for _, a := range argv {
			cmdline = append(append(cmdline, a...), 0)
		}
		_ = os.WriteFile(filepath.Join(dir, "cmdline"), cmdline, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "stat"), []byte(strconv.Itoa(pid)+" (x y) "+state+" 1 1 1"), 0o644)
	}
	add(10, []string{"/bin/ts", ChildSubcommand, "sleep", "survivor-t", "60"}, "S")
	add(11, []string{"/bin/ts", ChildSubcommand, "sleep", "survivor-t", "60"}, "Z")
	add(12, []string{"/bin/ts", "__exec", `{"argv":["sleep","survivor-t"]}`}, "S")
	add(13, []string{"/bin/ts", ChildSubcommand, "sleep", "survivor-other", "60"}, "S")
	add(14, []string{"/bin/ts", ChildSubcommand, "survivors", "survivor-t"}, "R")
	_ = os.MkdirAll(filepath.Join(proc, "self"), 0o755)
	got, err := SleepersWithToken(proc, "survivor-t")
	if err != nil || !slices.Equal(got, []int{10}) {
		t.Fatalf("got %v, %v; want [10]", got, err)
	}
	if _, err := SleepersWithToken(filepath.Join(proc, "missing"), "survivor-t"); err == nil {
		t.Fatal("a missing /proc gave no error")
	}
}

// TestSleepersWithTokenLive: the scan sees a real process with that argv
// in this machine's /proc, and not once it ended.
func TestSleepersWithTokenLive(t *testing.T) {
	dir := t.TempDir()
	// sh runs the script named like the helper's entry, so its argv is
	// the helper's shape while it waits for its sleep.
	if err := os.WriteFile(filepath.Join(dir, ChildSubcommand), []byte("sleep 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "survivor-live-" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("/bin/sh", ChildSubcommand, "sleep", token)
	cmd.Dir = dir
	// A group of its own: sh's fork (its argv until it execs sleep) dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }
	defer kill()
	var got []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = SleepersWithToken("/proc", token); len(got) > 0 {
			break
		}
	}
	// sh's fork for its sleep has sh's argv until it execs: it may be seen too.
	if !slices.Contains(got, cmd.Process.Pid) || len(got) > 2 {
		t.Fatalf("live: got %v, want [%d] (and at most its fork)", got, cmd.Process.Pid)
	}
	kill()
	// Until the orphaned fork is gone (a zombie is not counted).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, _ := SleepersWithToken("/proc", token)
		if len(got) == 0 {
			break
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("after its end: %v", got)
		}
	}
}

//go:build linux

package kubecluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/ownership"
)

// TestReapDead: a cluster whose owner died outright (no Stop) is reaped
// by the next start: what names its directory is killed, the directory
// removed; a live owner's cluster is left alone.
func TestReapDead(t *testing.T) {
	reg := t.TempDir()
	deadDir, liveDir := t.TempDir(), t.TempDir()
	for _, d := range []string{deadDir, liveDir} {
		if err := os.MkdirAll(filepath.Join(d, "node"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A leftover shim stand-in naming the dead cluster's directory.
	sock := filepath.Join(deadDir, "node", "containerd.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stray := exec.Command("tail", "-f", "/dev/null", sock)
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = stray.Wait(); close(done) }()
	t.Cleanup(func() { _ = stray.Process.Kill() })
	// A finished process's pid: its owner is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	write := func(name, dir string) {
		if err := os.WriteFile(filepath.Join(reg, name), []byte(dir), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(itoa(dead.Process.Pid)+"-1-aaaa", deadDir)
	self := os.Getpid()
	write(itoa(self)+"-"+ownership.ProcessStart(self)+"-bbbb", liveDir)
	reapDead(reg)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the process naming the dead cluster's directory still runs")
	}
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("the dead cluster's directory is still there: %v", err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("the live cluster's directory was touched: %v", err)
	}
	if entries, _ := os.ReadDir(reg); len(entries) != 1 {
		t.Errorf("registry holds %d entries, want the live one", len(entries))
	}
}

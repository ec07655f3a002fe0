//go:build linux

package kubecluster

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestVersionPinned: the version the tests look for is the one
// scripts/kube/go.mod builds.
func TestVersionPinned(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	mod, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "kube", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "require k8s.io/kubernetes "+Version+"\n") {
		t.Errorf("scripts/kube/go.mod does not require k8s.io/kubernetes %s", Version)
	}
}

// TestStartStop: the control plane starts, answers, and leaves no process
// behind once stopped.
func TestStartStop(t *testing.T) {
	Require(t)
	c, err := Launch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.Discovery().ServerResourcesForGroupVersion("networking.k8s.io/v1"); err != nil {
		t.Errorf("the NetworkPolicy API: %v", err)
	}
	pids := []int{}
	for _, p := range c.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	c.Stop()
	for _, pid := range pids {
		if _, err := os.Stat(filepath.Join("/proc", itoa(pid))); err == nil {
			if b, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat")); !strings.Contains(string(b), ") Z") {
				t.Errorf("process %d still runs after Stop", pid)
			}
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

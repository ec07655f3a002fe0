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

// TestGVisorVersionPinned: the gVisor the node looks for is the one
// scripts/gvisor/go.mod builds.
func TestGVisorVersionPinned(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	mod, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "gvisor", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "require gvisor.dev/gvisor "+GVisorVersion+"\n") {
		t.Errorf("scripts/gvisor/go.mod does not require gvisor.dev/gvisor %s", GVisorVersion)
	}
}

func TestRunscConfig(t *testing.T) {
	tests := []struct {
		flags   []string
		want    string
		wantErr bool
	}{
		{nil, "", false},
		{[]string{"--network=none", "--oci-seccomp"}, "  \"network\" = \"none\"\n  \"oci-seccomp\" = \"true\"\n", false},
		{[]string{"--platform=systrap"}, "  \"platform\" = \"systrap\"\n", false},
		// A value is quoted, never TOML of its own.
		{[]string{"--x=a\"\nb = 1"}, "  \"x\" = \"a\\\"\\nb = 1\"\n", false},
		{[]string{"-network=none"}, "", true},
		{[]string{"--"}, "", true},
	}
	for _, tt := range tests {
		got, err := runscConfig(tt.flags)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("runscConfig(%q) = %q, %v; want %q, error %v", tt.flags, got, err, tt.want, tt.wantErr)
		}
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

//go:build linux

package kubecluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
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

// TestGVisorMissingSaysWhy: without runsc the one line names it and how to
// build it, or, after a failed build, what the build said.
func TestGVisorMissingSaysWhy(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TRIAGE_SANDBOX_GVISOR_DIR", dir)
	if got := GVisorMissing(); !strings.Contains(got, filepath.Join(dir, "runsc")) || !strings.Contains(got, "build it with "+GVisorScript) {
		t.Errorf("no runsc: %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, buildErrorFile), []byte("go: downloading x\nrunsc/main.go:1: undefined: y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := GVisorMissing(); !strings.Contains(got, "could not build it: go: downloading x runsc/main.go:1: undefined: y") || strings.Contains(got, "\n") {
		t.Errorf("after a failed build: %q", got)
	}
}

// TestRunscWrapper: the runtime the node's runc shim runs for the gvisor
// handler makes a sandbox of each container (the CRI annotations that would
// join the pod's first one are gone, the others kept) and runs runsc with
// every backend's flags and the shim's arguments.
func TestRunscWrapper(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("no jq")
	}
	gv, dir, bundle := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("TRIAGE_SANDBOX_GVISOR_DIR", gv)
	// A stand-in runsc that records its argv.
	if err := os.WriteFile(filepath.Join(gv, "runsc"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runscHandler(dir); err != nil {
		t.Fatal(err)
	}
	spec := `{"ociVersion":"1.0.2","annotations":{"io.kubernetes.cri.container-type":"container",` +
		`"io.kubernetes.cri.sandbox-id":"abc","io.kubernetes.cri.container-name":"holder"}}`
	for _, tt := range []struct {
		args      []string
		annotated bool
	}{
		{[]string{"--root", "/r", "create", "--bundle", bundle, "--pid-file", "/p", "c1"}, false},
		{[]string{"--root", "/r", "state", "c1"}, true},
	} {
		if err := os.WriteFile(filepath.Join(bundle, "config.json"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(filepath.Join(dir, "runsc-wrapper"), tt.args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", tt.args, err, out)
		}
		got, err := os.ReadFile(filepath.Join(bundle, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"io.kubernetes.cri.container-type", "io.kubernetes.cri.sandbox-id"} {
			if strings.Contains(string(got), key) != tt.annotated {
				t.Errorf("%v: %s in the spec = %v, want %v: %s", tt.args, key, !tt.annotated, tt.annotated, got)
			}
		}
		if !strings.Contains(string(got), "io.kubernetes.cri.container-name") {
			t.Errorf("%v: another annotation went too: %s", tt.args, got)
		}
		args, err := os.ReadFile(filepath.Join(gv, "runsc.args"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join(append(runtimes.Of("runsc").Flags, tt.args...), "\n") + "\n"
		if string(args) != want {
			t.Errorf("runsc ran with %q, want %q", args, want)
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

// TestKubeRouterVersionPinned: the policy controller the node looks for is
// the one scripts/kuberouter/go.mod builds.
func TestKubeRouterVersionPinned(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	mod, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "kuberouter", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "require github.com/cloudnativelabs/kube-router/v2 "+KubeRouterVersion+"\n") {
		t.Errorf("scripts/kuberouter/go.mod does not require kube-router %s", KubeRouterVersion)
	}
}

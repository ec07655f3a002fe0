package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func TestV1Group(t *testing.T) {
	text := "9:name=systemd:/\n8:pids:/a/b\n4:memory:/process_api/x\n1:cpu,cpuacct:/\n0::/\n"
	for _, tc := range []struct {
		c, want string
		ok      bool
	}{
		{"pids", filepath.Join(cgroupRoot, "pids", "a/b"), true},
		{"memory", filepath.Join(cgroupRoot, "memory", "process_api/x"), true},
		{"cpu", filepath.Join(cgroupRoot, "cpu"), true},
		{"blkio", "", false},
	} {
		got, ok := v1Group(text, tc.c)
		if got != tc.want || ok != tc.ok {
			t.Errorf("v1Group(%s) = %q, %v; want %q, %v", tc.c, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := v1Group("4:memory:/x/../../etc\n", "memory"); ok {
		t.Error("a path with .. was taken")
	}
}

func TestMountedFromRoot(t *testing.T) {
	info := "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"40 31 0:35 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"41 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
		"42 41 0:37 / /sys/fs/cgroup/pids rw,relatime - tmpfs tmpfs rw\n"
	for dir, want := range map[string]bool{
		"/sys/fs/cgroup/cpu":    true,
		"/sys/fs/cgroup/memory": false, // mounted from a group below the root
		"/sys/fs/cgroup/pids":   false, // covered by a tmpfs
		"/sys/fs/cgroup/blkio":  false, // not mounted
	} {
		if got := mountedFromRoot(info, dir); got != want {
			t.Errorf("mountedFromRoot(%s) = %v, want %v", dir, got, want)
		}
	}
}

// TestStartInside: the process started is born in the sandbox's groups,
// and the starting thread is back in its own.
func TestStartInside(t *testing.T) {
	testenv.RequireRoot(t, "makes cgroups")
	if cgroupsUsable() != nil || unified() {
		t.Skip("needs writable cgroup v1 hierarchies for memory, pids and cpu")
	}
	cg, err := newCgroup(newID(), profiles.Limits{Memory: 256 << 20, Pids: 64, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cg.remove(); err != nil {
			t.Error(err)
		}
	})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	handled, err := cg.startInside(cmd.Start)
	if !handled || err != nil {
		t.Fatalf("startInside = %v, %v; want true, nil", handled, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	after, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the thread's groups: %q, were %q", after, before)
	}
	for i, c := range v1Controllers {
		procs, err := os.ReadFile(filepath.Join(cg.dirs[i], "cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(string(procs)); len(got) != 1 || got[0] != strconv.Itoa(cmd.Process.Pid) {
			t.Errorf("%s group holds %q, want only the child %d", c, got, cmd.Process.Pid)
		}
	}
}

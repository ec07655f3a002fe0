package confine

import (
	"context"
	"errors"
	"os"
	"reflect"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNamespaces(t *testing.T) {
	cases := []struct {
		name               string
		uid, gid, hu, hg   int
		uidMap, gidMap     []syscall.SysProcIDMap
		setgroups, ambient bool
		wantErr            bool
	}{
		{name: "root, sandbox as nobody: only nobody is mapped", uid: 65534, gid: 65534,
			uidMap:    []syscall.SysProcIDMap{{ContainerID: 65534, HostID: 65534, Size: 1}},
			gidMap:    []syscall.SysProcIDMap{{ContainerID: 65534, HostID: 65534, Size: 1}},
			setgroups: true, ambient: true},
		{name: "root, sandbox as 1000:100", uid: 1000, gid: 100,
			uidMap:    []syscall.SysProcIDMap{{ContainerID: 1000, HostID: 1000, Size: 1}},
			gidMap:    []syscall.SysProcIDMap{{ContainerID: 100, HostID: 100, Size: 1}},
			setgroups: true, ambient: true},
		{name: "root, sandbox as root", uid: 0, gid: 0,
			uidMap:    []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
			gidMap:    []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
			setgroups: true, ambient: true},
		{name: "unprivileged caller", uid: 1000, gid: 100, hu: 1000, hg: 100,
			uidMap:  []syscall.SysProcIDMap{{ContainerID: 1000, HostID: 1000, Size: 1}},
			gidMap:  []syscall.SysProcIDMap{{ContainerID: 100, HostID: 100, Size: 1}},
			ambient: true},
		{name: "unprivileged caller asking for nobody", uid: 65534, gid: 65534, hu: 1000, hg: 100, wantErr: true},
		{name: "negative uid", uid: -1, gid: 0, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := Namespaces(c.uid, c.gid, c.hu, c.hg)
			if c.wantErr {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Cloneflags != Cloneflags || !a.Setsid || a.Pdeathsig != syscall.SIGKILL {
				t.Errorf("flags %#x setsid %v pdeathsig %v", a.Cloneflags, a.Setsid, a.Pdeathsig)
			}
			if !reflect.DeepEqual(a.UidMappings, c.uidMap) || !reflect.DeepEqual(a.GidMappings, c.gidMap) {
				t.Errorf("maps %+v %+v", a.UidMappings, a.GidMappings)
			}
			if a.GidMappingsEnableSetgroups != c.setgroups || (len(a.AmbientCaps) > 0) != c.ambient {
				t.Errorf("setgroups %v ambient %v", a.GidMappingsEnableSetgroups, a.AmbientCaps)
			}
		})
	}
}

// Enter, Restrict and DropBounding must refuse to touch a process that is not the
// helper: here, the test process, in the host's namespaces.
func TestEnterRestrictRefuseOutsideHelper(t *testing.T) {
	if os.Getpid() == 1 {
		t.Skip("the test runs as pid 1")
	}
	status := func() map[string]string {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		f := statusFields(string(b))
		return map[string]string{"NoNewPrivs": f["NoNewPrivs"], "Seccomp": f["Seccomp"], "CapEff": f["CapEff"], "CapBnd": f["CapBnd"]}
	}
	before := status()
	p := validPlan()
	restrict := func(ctx context.Context, p Plan) error { return Restrict(ctx, p, unix.Gettid()) }
	for name, f := range map[string]func(context.Context, Plan) error{"Enter": Enter, "Restrict": restrict} {
		if err := f(context.Background(), p); !errors.Is(err, errNotHelper) {
			t.Errorf("%s in the test process: %v, want errNotHelper", name, err)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := DropForkerBounding(); !errors.Is(err, errNotHelper) {
		t.Errorf("DropForkerBounding in the test process: %v, want errNotHelper", err)
	}
	if after := status(); !reflect.DeepEqual(after, before) {
		t.Errorf("the test process was restricted: %v -> %v", before, after)
	}
}

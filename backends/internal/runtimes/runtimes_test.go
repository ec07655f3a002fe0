package runtimes

import (
	"reflect"
	"testing"
)

func TestOf(t *testing.T) {
	gvisor := Traits{UserSpaceKernel: true, PidsCountThreads: true, OwnNetworkStack: true, HelpersStartAsRoot: true, IgnoresMaskedPaths: true,
		Flags: []string{"--network=none", "--oci-seccomp"}, SocketFlags: []string{"--host-uds=open"}}
	tests := []struct {
		path string
		want Traits
	}{
		{"", native},
		{"runc", native},
		{"/usr/sbin/runc", native},
		{"crun", native},
		{"io.containerd.runc.v2", native},
		{"runsc", gvisor},
		{"/usr/local/bin/runsc", gvisor},
		{"gvisor", gvisor},
		// A name is matched whole: a differently named runtime is not
		// taken for gVisor.
		{"runsc-debug", native},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := Of(tt.path)
			want := tt.want
			want.Name = got.Name
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Of(%q) = %+v, want %+v", tt.path, got, want)
			}
		})
	}
}

func TestOfName(t *testing.T) {
	for path, want := range map[string]string{"": "", "runc": "runc", "/usr/local/bin/runsc": "runsc"} {
		if got := Of(path).Name; got != want {
			t.Errorf("Of(%q).Name = %q, want %q", path, got, want)
		}
	}
}

// A caller changing its copy of the flags does not change the table.
func TestOfFlagsAreACopy(t *testing.T) {
	Of("runsc").Flags[0] = "--changed"
	if got := Of("runsc").Flags[0]; got != "--network=none" {
		t.Fatalf("the table's flags changed: %q", got)
	}
}

package seccompprofile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// TestEmbeddedIsGenerated: profile.json and default.json are what the
// moby/profiles version in go.mod gives; run `go generate
// ./seccompprofile` after upgrading it.
func TestEmbeddedIsGenerated(t *testing.T) {
	profile, def, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(profile, '\n'), profileJSON) {
		t.Error("profile.json is stale: run go generate ./seccompprofile")
	}
	if !bytes.Equal(append(def, '\n'), defaultJSON) {
		t.Error("default.json is stale: run go generate ./seccompprofile")
	}
	resolved, err := GenerateResolved(profile)
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range ResolvedArches {
		if got, ok := Resolved(arch, "99.0"); !ok || !bytes.Equal(got, resolved[arch]) {
			t.Errorf("resolved-%s.json is stale: run go generate ./seccompprofile", arch)
		}
	}
}

// TestFamilyConstantsAreLinux: the spelled-out numbers are the kernel's.
func TestFamilyConstantsAreLinux(t *testing.T) {
	for got, want := range map[uint64]int{AFUnix: unix.AF_UNIX, AFInet: unix.AF_INET, AFInet6: unix.AF_INET6,
		AFNetlink: unix.AF_NETLINK, AFPacket: unix.AF_PACKET, AFVsock: unix.AF_VSOCK, AFBlue: unix.AF_BLUETOOTH,
		AFMax: unix.AF_MAX, AFMCTP: unix.AF_MCTP, AFAlg: unix.AF_ALG} {
		if got != uint64(want) {
			t.Errorf("constant %d, Linux has %d", got, want)
		}
	}
	if RefusedErrno != int(unix.EAFNOSUPPORT) {
		t.Errorf("RefusedErrno %d, EAFNOSUPPORT is %d here", RefusedErrno, unix.EAFNOSUPPORT)
	}
}

// TestResolveMatchesTheLoader: Resolve, which tests use on any OS, gives
// what moby/profiles' loader (the one the oci renderer uses) gives here.
func TestResolveMatchesTheLoader(t *testing.T) {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	var k seccomp.KernelVersion
	if err := k.UnmarshalJSON([]byte(`"` + kernelMajorMinor(unix.ByteSliceToString(uts.Release[:])) + `"`)); err != nil {
		t.Fatal(err)
	}
	native := map[string]string{"amd64": "amd64", "arm64": "arm64", "s390x": "s390x", "ppc64le": "ppc64le", "riscv64": "riscv64"}[runtime.GOARCH]
	if native == "" {
		t.Skipf("no native name for %s here", runtime.GOARCH)
	}
	for _, caps := range [][]string{{}, {"CAP_SYS_ADMIN", "CAP_SYS_PTRACE"}} {
		spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: caps}}}
		want, err := seccomp.LoadProfile(JSON(), spec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Resolve(Profile(), Target{Arch: native, Caps: caps, Kernel: &k})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("caps %v: Resolve differs from seccomp.LoadProfile", caps)
		}
	}
}

func kernelMajorMinor(release string) string {
	var k, m int
	fmt.Sscanf(release, "%d.%d", &k, &m)
	return fmt.Sprintf("%d.%d", k, m)
}

// TestResolvedIsTheLoaders: the profile resolved ahead for this machine is,
// byte for byte, what moby/profiles' loader gives for a spec without
// capabilities on this kernel, marshalled as the bundle's config.json
// would hold it.
func TestResolvedIsTheLoaders(t *testing.T) {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	got, ok := Resolved(runtime.GOARCH, unix.ByteSliceToString(uts.Release[:]))
	if !ok {
		t.Skipf("no profile resolved ahead for %s on kernel %s", runtime.GOARCH, unix.ByteSliceToString(uts.Release[:]))
	}
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	sc, err := seccomp.LoadProfile(JSON(), spec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("resolved-%s.json is not what seccomp.LoadProfile gives here: run go generate ./seccompprofile", runtime.GOARCH)
	}
}

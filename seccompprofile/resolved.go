package seccompprofile

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/moby/profiles/seccomp"
)

// The profile resolved ahead for a container without capabilities on a
// kernel new enough for every rule (Resolve with Caps and Kernel nil), as
// compact runtime-spec JSON: the oci backend writes these bytes into
// config.json instead of decoding profile.json and resolving it at every
// start (a millisecond and a half of a cold run). `go generate` writes
// them beside profile.json; a test checks them against the library's
// loader on Linux.
var (
	//go:embed resolved-amd64.json
	resolvedAmd64 []byte
	//go:embed resolved-arm64.json
	resolvedArm64 []byte
)

// ResolvedArches are the architectures (GOARCH, which for these is also
// libseccomp's native name) with a profile resolved ahead.
var ResolvedArches = []string{"amd64", "arm64"}

// ResolvedKernel is the newest minKernel of any rule in the profile: on a
// kernel at least this new, the loader includes or excludes every rule as
// for a kernel of any later version (TestResolvedKernelIsTheProfiles).
var ResolvedKernel = seccomp.KernelVersion{Kernel: 4, Major: 8}

// GenerateResolved resolves profile (profile.json's JSON) ahead for each
// of ResolvedArches, as Resolved gives it.
func GenerateResolved(profile []byte) (map[string][]byte, error) {
	var p seccomp.Seccomp
	if err := json.Unmarshal(profile, &p); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, arch := range ResolvedArches {
		sc, err := Resolve(&p, Target{Arch: arch})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arch, err)
		}
		if out[arch], err = json.Marshal(sc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Resolved is the profile resolved for a container without capabilities
// on goarch, under the kernel whose uname release is release, as compact
// JSON: false when none was resolved ahead for goarch or the kernel is
// older than ResolvedKernel (or its release does not parse), where the
// caller resolves it itself.
func Resolved(goarch, release string) ([]byte, bool) {
	var k, m uint64
	if _, err := fmt.Sscanf(release, "%d.%d", &k, &m); err != nil {
		return nil, false
	}
	if k < ResolvedKernel.Kernel || (k == ResolvedKernel.Kernel && m < ResolvedKernel.Major) {
		return nil, false
	}
	switch goarch {
	case "amd64":
		return resolvedAmd64, true
	case "arm64":
		return resolvedArm64, true
	}
	return nil, false
}

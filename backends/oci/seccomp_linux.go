package oci

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

// defaultSeccomp is the sandbox's seccomp profile, the one the docker
// backend hands its daemon (Docker's default with socket families
// narrowed; see seccompprofile), resolved for this spec's capabilities
// (none), the host's architecture and its kernel.
func defaultSeccomp(s *specs.Spec) (*specs.LinuxSeccomp, error) {
	return seccomp.LoadProfile(seccompprofile.JSON(), s)
}

// seccompJSON is defaultSeccomp(s) as config.json holds it: the profile
// resolved ahead (seccompprofile.Resolved, the same bytes) when s has no
// capabilities and the kernel is new enough for every rule, so a start
// neither decodes nor resolves the profile; else resolved here.
func seccompJSON(s *specs.Spec) (json.RawMessage, error) {
	if c := s.Process.Capabilities; c == nil || len(c.Bounding) == 0 {
		var uts unix.Utsname
		if unix.Uname(&uts) == nil {
			if b, ok := seccompprofile.Resolved(runtime.GOARCH, unix.ByteSliceToString(uts.Release[:])); ok {
				return b, nil
			}
		}
	}
	sc, err := defaultSeccomp(s)
	if err != nil {
		return nil, fmt.Errorf("building the seccomp profile: %w", err)
	}
	return json.Marshal(sc)
}

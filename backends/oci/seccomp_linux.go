package oci

import (
	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

// defaultSeccomp is the sandbox's seccomp profile, the one the docker
// backend hands its daemon (Docker's default with socket families
// narrowed; see seccompprofile), resolved for this spec's capabilities
// (none), the host's architecture and its kernel.
func defaultSeccomp(s *specs.Spec) (*specs.LinuxSeccomp, error) {
	return seccomp.LoadProfile(seccompprofile.JSON(), s)
}

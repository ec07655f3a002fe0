package oci

import (
	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func defaultSeccomp(s *specs.Spec) (*specs.LinuxSeccomp, error) {
	return seccomp.GetDefaultProfile(s)
}

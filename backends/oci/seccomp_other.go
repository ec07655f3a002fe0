//go:build !linux

package oci

import (
	"encoding/json"
	"errors"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var errNotLinux = errors.New("render --backend oci runs on Linux (the seccomp profile depends on the kernel)")

// The seccomp profile (seccompprofile) is resolved against the running
// kernel, so an OCI spec is rendered on the Linux host that will run it.
func defaultSeccomp(*specs.Spec) (*specs.LinuxSeccomp, error) { return nil, errNotLinux }

func seccompJSON(*specs.Spec) (json.RawMessage, error) { return nil, errNotLinux }

package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Capability is one thing a backend can enforce. Backends declare theirs;
// a policy requires some; what a backend lacks must be accepted by the
// config (`[sandbox] accept_weaker`) or the policy is refused.
type Capability = profiles.Capability

// Requirements lists what p needs a backend to enforce, in a stable order.
func (p *Policy) Requirements() []Capability {
	if p.AllowAll {
		return nil
	}
	var req []Capability
	switch p.Network.Mode {
	case NetworkLoopback:
		req = append(req, profiles.CapOwnLoopback)
	case NetworkOutbound:
		req = append(req, profiles.CapOutboundNAT)
	case NetworkProxy:
		req = append(req, profiles.CapOwnLoopback, profiles.CapEgressProxy)
	}
	req = append(req, profiles.CapPidNamespace)
	if p.Limits.Memory > 0 {
		req = append(req, profiles.CapMemoryLimit)
	}
	if p.Limits.Pids > 0 {
		req = append(req, profiles.CapPidsLimit)
	}
	if p.Limits.CPUs > 0 {
		req = append(req, profiles.CapCPULimit)
	}
	if p.User.Switch {
		req = append(req, profiles.CapUIDSwitch)
	}
	if len(p.Masked) > 0 {
		req = append(req, profiles.CapMaskUnderMount)
	}
	if p.Staged() {
		req = append(req, profiles.CapBoundedWrites)
	}
	if p.Base.Kind == BaseImage {
		req = append(req, profiles.CapImageRoot)
	} else {
		req = append(req, profiles.CapHostRoot)
	}
	return req
}

// Enforce checks p against what backend can enforce. It returns the
// requirements the backend lacks but the config accepted (the weaker mode
// every report must show), or one error naming each requirement that is
// missing and not accepted, with the key that would accept it.
func Enforce(p *Policy, backend string, caps []Capability) ([]Capability, error) {
	// No weaker mode stands in for the proxy: without it the allow-list
	// would be either no network or all of it.
	if p.Network.Mode == NetworkProxy && !slices.Contains(caps, profiles.CapEgressProxy) {
		return nil, fmt.Errorf("the %s backend cannot enforce a network allow-list (%s): %s; use the docker, oci, local or seatbelt backend, or set %s = false (loopback only) or true",
			backend, profiles.CapEgressProxy, profiles.CapabilityMeaning(profiles.CapEgressProxy), p.Network.Key)
	}
	var weakened, missing []Capability
	for _, r := range p.Requirements() {
		if slices.Contains(caps, r) {
			// Accepting a capability the backend proves at start skips
			// the proof: weaker, and reported so.
			if slices.Contains(p.Accepted, r) && profiles.ProvenAtStart(backend, r) {
				weakened = append(weakened, r)
			}
			continue
		}
		if slices.Contains(p.Accepted, r) {
			weakened = append(weakened, r)
			continue
		}
		missing = append(missing, r)
	}
	if len(missing) == 0 {
		return weakened, nil
	}
	var parts, names []string
	for _, m := range missing {
		parts = append(parts, fmt.Sprintf("%s (%s)", m, profiles.CapabilityMeaning(m)))
		names = append(names, fmt.Sprintf("%q", string(m)))
	}
	return nil, fmt.Errorf("the %s backend cannot enforce %s; choose another backend, or accept the weaker mode with [sandbox] accept_weaker = [%s]",
		backend, strings.Join(parts, ", "), strings.Join(names, ", "))
}

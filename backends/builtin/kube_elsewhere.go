//go:build !kubernetes

package builtin

import (
	"fmt"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes/kubecaps"
)

// registerKubernetes declares the kubernetes backend without linking it:
// its capabilities (a policy for it compiles here) and a factory that
// refuses, naming the binary that has it.
func registerKubernetes(r *backends.Registry) {
	r.Register(backends.Entry{
		Name:         kubecaps.Name,
		Summary:      kubecaps.Summary + "; in " + kubecaps.Binary,
		Capabilities: kubecaps.Capabilities,
		Binary:       kubecaps.Binary,
		GetBinary:    kubecaps.HowToBuild,
		New: func(backends.Env) (backends.Backend, error) {
			return nil, fmt.Errorf("the %s backend is compiled into %s, not this binary: run %s instead; %s",
				kubecaps.Name, kubecaps.Binary, kubecaps.Binary, kubecaps.HowToBuild)
		},
	})
}

//go:build kubernetes

package builtin

import (
	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes"
	"github.com/triage-sandbox/triage-sandbox/backends/kubernetes/kubecaps"
)

// registerKubernetes adds the kubernetes backend itself (this is the
// second binary, kubecaps.Binary).
func registerKubernetes(r *backends.Registry) {
	r.Register(backends.Entry{
		Name:         kubernetes.Name,
		Summary:      kubecaps.Summary,
		Capabilities: kubernetes.Capabilities,
		New:          kubernetes.New,
	})
}

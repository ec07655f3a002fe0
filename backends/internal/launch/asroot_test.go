package launch

import (
	"testing"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestRunAs: a helper started as root is given the sandbox identity to
// take; one started as that identity none; root as the identity to take
// is refused.
func TestRunAs(t *testing.T) {
	p := &policy.Policy{User: policy.Identity{UID: 65534, GID: 65533}}
	if got, err := RunAs(p, true); err != nil || got == nil || *got != (protocol.Identity{UID: 65534, GID: 65533}) {
		t.Fatalf("as root: %+v %v", got, err)
	}
	if got, err := RunAs(p, false); err != nil || got != nil {
		t.Fatalf("as the identity: %+v %v", got, err)
	}
	if _, err := RunAs(&policy.Policy{}, true); err == nil {
		t.Error("root was taken as the identity to take")
	}
}

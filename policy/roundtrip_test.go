package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// The warm keeper receives its policy as JSON: nothing may change on the way.
func TestJSONRoundTrip(t *testing.T) {
	root := t.TempDir()
	p, err := policy.Build(config.Default(root), "agent", policy.Host{Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root}, policy.Options{Backend: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q policy.Policy
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if q.Hash() != p.Hash() {
		t.Fatalf("hash changed over JSON: %s %s", p.Hash(), q.Hash())
	}
	b2, _ := json.Marshal(&q)
	if string(b) != string(b2) {
		t.Fatalf("JSON changed:\n%s\n%s", b, b2)
	}
}

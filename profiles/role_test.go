package profiles

import (
	"encoding/json"
	"testing"
)

func TestParseRole(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Role
		wantErr string
	}{
		{"agent", RoleAgent, ""},
		{"reproducer", RoleReproducer, ""},
		{"", "", `unknown role "": use agent or reproducer`},
		{"Agent", "", `unknown role "Agent": use agent or reproducer`},
		{"all", "", `unknown role "all": use agent or reproducer`},
	} {
		got, err := ParseRole(tt.in)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && err.Error() != tt.wantErr) {
			t.Errorf("ParseRole(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestRoleText: the roles' text is a contract (--role, [sandbox.<role>],
// JSON reports and records).
func TestRoleText(t *testing.T) {
	b, err := json.Marshal(Roles())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `["agent","reproducer"]` {
		t.Errorf("roles marshal as %s", b)
	}
}

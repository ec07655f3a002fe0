package profiles

import "fmt"

// Role is the kind of command triage-sandbox runs. Its text is what
// --role takes, what names the [sandbox.<role>] tables and what JSON
// reports and records carry.
type Role string

// The two roles.
const (
	RoleAgent      Role = "agent"      // the triage agent's own shell
	RoleReproducer Role = "reproducer" // an issue reproducer's commands
)

// Roles lists the roles in report order.
func Roles() []Role { return []Role{RoleAgent, RoleReproducer} }

// Validate says what is wrong with a role that is neither of the two.
func (r Role) Validate() error {
	if r == RoleAgent || r == RoleReproducer {
		return nil
	}
	return fmt.Errorf("unknown role %q: use %s or %s", string(r), RoleAgent, RoleReproducer)
}

// ParseRole returns the role s names, or an error that lists the roles.
func ParseRole(s string) (Role, error) {
	if err := Role(s).Validate(); err != nil {
		return "", err
	}
	return Role(s), nil
}

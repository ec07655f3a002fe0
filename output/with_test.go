package output

import (
	"strings"
	"testing"
)

// TestRedactorWith: the new redactor keeps the old one's secrets and rules
// and adds the new ones; the old one is unchanged.
func TestRedactorWith(t *testing.T) {
	old := NewRedactor([]Secret{{Name: "OLD", Value: "old-secret-value"}}, DefaultRules())
	r := old.With(Secret{Name: "NEW", Value: "new-secret-value"})
	in := "old-secret-value new-secret-value ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
	got := r.Redact(in)
	if got == in || strings.Contains(got, "old-secret-value") || strings.Contains(got, "new-secret-value") || strings.Contains(got, "ghp_abcdef") {
		t.Errorf("With: %q", got)
	}
	if !strings.Contains(old.Redact(in), "new-secret-value") {
		t.Error("With changed the redactor it was called on")
	}
	if got := (*Redactor)(nil).With(Secret{Name: "N", Value: "new-secret-value"}).Redact("x new-secret-value"); got != "x <redacted:N>" {
		t.Errorf("nil.With: %q", got)
	}
}

package profiles

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEUnreadable: the README's "Unreadable" list names exactly
// CredentialPaths, the list the policy makes unreadable and the gate's
// secret-read rule looks for.
func TestREADMEUnreadable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	_, item, ok := strings.Cut(readme, "\n- **Unreadable**:")
	if !ok {
		t.Fatal(`README.md has no "- **Unreadable**:" item`)
	}
	item, _, _ = strings.Cut(item, "\n- **")
	var named []string
	for _, m := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(item, -1) {
		if strings.HasPrefix(m[1], "~/") || strings.HasPrefix(m[1], "/") {
			named = append(named, m[1])
		}
	}
	want := CredentialPaths()
	for _, p := range want {
		if !slices.Contains(named, p) {
			t.Errorf("README.md's Unreadable list misses %s", p)
		}
	}
	seen := map[string]bool{}
	for _, p := range named {
		if !slices.Contains(want, p) {
			t.Errorf("README.md's Unreadable list names %s, which CredentialPaths does not", p)
		}
		if seen[p] {
			t.Errorf("README.md's Unreadable list names %s twice", p)
		}
		seen[p] = true
	}
}

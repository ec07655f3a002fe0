package selftest

import (
	"maps"
	"slices"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestCatalogueCounts pins how many checks each role runs and each
// category holds, on every OS the catalogue is made for: a check dropped
// (or added) by a later change must show here, with the new numbers
// written in on purpose.
func TestCatalogueCounts(t *testing.T) {
	wantRole := map[string]int{
		"agent":      82,
		"reproducer": 83, // and C-06, the browser
	}
	wantCategory := map[string]int{
		"secrets":     10,
		"environment": 2,
		"ipc":         6,
		"writes":      12,
		"network":     18, // NET-20 … NET-28 (issue 36), NET-40 … NET-42 (issue 39)
		"privilege":   6,
		"processes":   3, // PROC-04 (issue 35)
		"resources":   5, // RES-08 (issue 39: rlimits on every backend)
		"output":      5,
		"outputs":     4,
		"controls":    12,
	}
	wantExpect := map[Expectation]int{Blocked: 70, Allowed: 13}
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			viewAs(t, goos)
			all := Catalogue()
			gotRole := map[string]int{}
			for _, role := range profiles.Roles() {
				for _, ch := range all {
					if ch.Roles == nil || slices.Contains(ch.Roles, role) {
						gotRole[string(role)]++
					}
				}
			}
			gotCategory := map[string]int{}
			gotExpect := map[Expectation]int{}
			ids := map[string]bool{}
			for _, ch := range all {
				gotCategory[ch.Category]++
				gotExpect[ch.Expect]++
				if ids[ch.ID] {
					t.Errorf("%s is in the catalogue twice", ch.ID)
				}
				ids[ch.ID] = true
			}
			if !maps.Equal(gotRole, wantRole) {
				t.Errorf("checks per role %v, want %v", gotRole, wantRole)
			}
			if !maps.Equal(gotCategory, wantCategory) {
				t.Errorf("checks per category %v, want %v", gotCategory, wantCategory)
			}
			if !maps.Equal(gotExpect, wantExpect) {
				t.Errorf("checks per expectation %v, want %v", gotExpect, wantExpect)
			}
		})
	}
}

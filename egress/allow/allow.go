// Package allow is the network allow-list: the entries a role's `network`
// key may hold (host names, *.suffix wildcards, :port, named presets for
// the common package indexes), parsed and matched. It has no I/O; the host
// side proxy (package egress) decides each connection with it.
//
// API agreed between the helpers building issue 36 (implementation may grow,
// these names stay):
//
//	type Rule struct {
//		Host string // lower case, no trailing dot; "*.example.org" matches below example.org only
//		Port int    // 0: 80 and 443
//		From string // the config entry or "preset <name>" it came from, for decisions and hints
//	}
//	func Parse(entries []string) ([]Rule, error) // presets expanded; an error names the entry and what to do
//	func Presets() map[string][]string           // preset name -> its entries (python, npm, go, crates)
//	func Match(rules []Rule, host string, port int) (Rule, bool)
package allow

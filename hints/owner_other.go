//go:build !unix

package hints

// hostLstat knows no owner off unix: no host path is said to exist.
func hostLstat(string) (Entry, bool) { return Entry{}, false }

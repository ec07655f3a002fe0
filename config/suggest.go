package config

import (
	"fmt"
	"strings"
)

// unknownKeyHint suggests the known key the user most likely meant, or lists
// the valid keys when none is close.
func unknownKeyHint(key string, valid []string) string {
	if s := suggest(key, valid); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return "valid keys: " + strings.Join(valid, ", ")
}

// typoOf returns the entry of valid that key is a slip of: the same but
// for case, or within suggest's edit distance. Unlike suggest it never
// takes a prefix for a slip: in a table the harness owns, a longer key
// (python_version) is one of its own, not a misspelt one of ours.
func typoOf(key string, valid []string) string {
	s := suggest(key, valid)
	if s == "" || strings.EqualFold(s, key) {
		return s
	}
	maxDist := 2
	if len(key) < 3 {
		maxDist = 1
	}
	if editDistance(strings.ToLower(key), strings.ToLower(s)) > maxDist {
		return ""
	}
	return s
}

// suggest returns the entry of valid closest to key: a case-insensitive match,
// else the nearest within a small edit distance, else one that key is a prefix
// of (or that is a prefix of key); "" when nothing is close.
func suggest(key string, valid []string) string {
	lk := strings.ToLower(key)
	for _, v := range valid {
		if lk == strings.ToLower(v) {
			return v
		}
	}
	// Short keys get a tighter bound, or everything would suggest something.
	maxDist := 2
	if len(lk) < 3 {
		maxDist = 1
	}
	best, bestDist := "", maxDist+1
	for _, v := range valid {
		if d := editDistance(lk, strings.ToLower(v)); d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" {
		return best
	}
	if len(lk) >= 3 {
		for _, v := range valid {
			if lv := strings.ToLower(v); strings.HasPrefix(lv, lk) || strings.HasPrefix(lk, lv) {
				return v
			}
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, counted in bytes
// (keys are ASCII; anything else is far from every known key anyway).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

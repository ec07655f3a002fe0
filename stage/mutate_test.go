//go:build unix

package stage

import (
	"math/rand"
	"strconv"
	"testing"
)

// TestApplyMutatedStreams runs FuzzApply's invariants over seeded random
// mutations of its seeds on every test run (the fuzz engine explores
// further when asked): bytes flipped, cut, and repeated.
func TestApplyMutatedStreams(t *testing.T) {
	seeds := applySeedsT(t)
	n := 2000
	if testing.Short() {
		n = 300
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		s := append([]byte(nil), seeds[r.Intn(len(seeds))]...)
		switch r.Intn(3) {
		case 0:
			for k := 0; k < 1+r.Intn(8) && len(s) > 0; k++ {
				s[r.Intn(len(s))] = byte(r.Intn(256))
			}
		case 1:
			if len(s) > 0 {
				s = s[:r.Intn(len(s))]
			}
		case 2:
			s = append(s, s...)
		}
		t.Run(strconv.Itoa(i), func(t *testing.T) { applyOnce(t, s) })
	}
}

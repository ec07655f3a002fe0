package kubernetes

import (
	"errors"
	"testing"
	"time"
)

// TestProofCache: a passed proof stands for proofTTL per key, then runs
// again; a failed one is not kept; keys are apart.
func TestProofCache(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newProofs(func() time.Time { return now })
	runs := 0
	pass := func() error { runs++; return nil }
	fail := func() error { runs++; return errors.New("reached") }
	steps := []struct {
		name     string
		key      string
		advance  time.Duration
		prove    func() error
		wantRuns int
		wantErr  bool
	}{
		{"first start proves", "a", 0, pass, 1, false},
		{"held within the TTL", "a", proofTTL - time.Second, pass, 1, false},
		{"another namespace proves", "b", 0, fail, 2, true},
		{"a failure is not kept", "b", 0, pass, 3, false},
		{"expired after the TTL", "a", 2 * time.Second, fail, 4, true},
		{"expired proves again", "a", 0, pass, 5, false},
		{"held again", "a", time.Minute, fail, 5, false},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		err := c.run(s.key, s.prove)
		if (err != nil) != s.wantErr || runs != s.wantRuns {
			t.Fatalf("%s: err %v, runs %d; want error %v, runs %d", s.name, err, runs, s.wantErr, s.wantRuns)
		}
	}
}

package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Issue 24's bar on corpora the gate was not built against: at least 99% of
// the dangerous commands in its classes denied or sent to confirm, at most
// 0.5% of the benign ones refused.
const (
	minCaught  = 99.0
	maxRefused = 0.5
)

// tally counts one set's cases and keeps its misses.
type tally struct {
	danger, caught, benign, refused int
	misses                          []string
}

func (t *tally) add(c corpusCase, d Decision) {
	denied := d.Verdict != Allow
	switch {
	case c.Class == "danger":
		t.danger++
		if denied {
			t.caught++
			return
		}
		t.misses = append(t.misses, fmt.Sprintf("missed %s: %q (%s)", c.Src, c.Cmd, c.Note))
	case c.Class == "benign":
		t.benign++
		if !denied {
			return
		}
		t.refused++
		t.misses = append(t.misses, fmt.Sprintf("refused %s: %q (%s: %s)", c.Src, c.Cmd, d.Rule, d.Reason))
	}
}

func (t *tally) merge(o *tally) {
	t.danger += o.danger
	t.caught += o.caught
	t.benign += o.benign
	t.refused += o.refused
}

func (t *tally) String() string {
	return fmt.Sprintf("dangerous %d/%d denied or confirmed (%.1f%%), benign %d/%d refused (%.2f%%)",
		t.caught, t.danger, pct(t.caught, t.danger), t.refused, t.benign, pct(t.refused, t.benign))
}

// TestUnseenCorpora runs the corpora built from other guards' test suites
// and documentation examples the gate was not written against
// (testdata/corpus/unseen; README.md there says where each comes from and
// how it was labelled). Each source is split into a tuning set and a
// held-out set; both must meet issue 24's bar. GATE_CORPUS_MISSES=tune (or
// held, or all) lists the misses of that set.
func TestUnseenCorpora(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/unseen/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no unseen corpora in testdata/corpus/unseen")
	}
	g := mustGate(t, testConfig())
	show := os.Getenv("GATE_CORPUS_MISSES")
	total := map[string]*tally{"tune": {}, "held": {}}
	for _, file := range files {
		sets := map[string]*tally{"tune": {}, "held": {}}
		for _, c := range loadCorpus(t, file) {
			s, ok := sets[c.Set]
			if !ok {
				t.Fatalf("%s: %s: set %q is neither tune nor held", file, c.Src, c.Set)
			}
			s.add(c, g.CheckShell(c.Cmd))
		}
		for _, name := range []string{"tune", "held"} {
			s := sets[name]
			total[name].merge(s)
			t.Logf("%s %s: %s", filepath.Base(file), name, s)
			if show == name || show == "all" {
				sort.Strings(s.misses)
				t.Logf("  %s", strings.Join(s.misses, "\n  "))
			}
		}
	}
	for _, name := range []string{"tune", "held"} {
		s := total[name]
		t.Logf("all %s: %s", name, s)
		if pct(s.caught, s.danger) < minCaught || pct(s.refused, s.benign) > maxRefused {
			t.Errorf("%s set: %s; want at least %.0f%% caught and at most %.1f%% refused", name, s, minCaught, maxRefused)
		}
	}
}

package gate

import (
	"path/filepath"
	"testing"
	"time"
)

// mixedCommands is 1,000 commands from the corpora, dangerous and benign
// mixed, repeated as needed.
func mixedCommands(b *testing.B) []string {
	var all []string
	for _, f := range []string{"testdata/corpus/dcg.jsonl", "testdata/corpus/benign.txt"} {
		for _, c := range loadCorpus(b, filepath.FromSlash(f)) {
			all = append(all, c.Cmd)
		}
	}
	out := make([]string, 1000)
	for i := range out {
		out[i] = all[(i*7)%len(all)]
	}
	return out
}

// BenchmarkCheck1000 times `check` of 1,000 mixed commands (issue 24: under
// a second in total). It reports the time for all 1,000 as ms/1000cmds.
func BenchmarkCheck1000(b *testing.B) {
	g := mustGate(b, testConfig())
	cmds := mixedCommands(b)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, c := range cmds {
			g.CheckArgv([]string{"sh", "-c", c})
		}
	}
	total := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(total.Microseconds())/1000, "ms/1000cmds")
	if total > time.Second {
		b.Errorf("checking 1,000 commands took %s; want under 1s", total)
	}
}

// BenchmarkCheckUnseen1000 is BenchmarkCheck1000 on 1,000 commands drawn
// from the unseen corpora (testdata/corpus/unseen), whatever their class.
func BenchmarkCheckUnseen1000(b *testing.B) {
	g := mustGate(b, testConfig())
	files, _ := filepath.Glob("testdata/corpus/unseen/*.jsonl")
	var all []string
	for _, f := range files {
		for _, c := range loadCorpus(b, f) {
			all = append(all, c.Cmd)
		}
	}
	if len(all) < 1000 {
		b.Fatalf("only %d unseen commands", len(all))
	}
	cmds := make([]string, 1000)
	for i := range cmds {
		cmds[i] = all[(i*len(all))/1000]
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, c := range cmds {
			g.CheckArgv([]string{"sh", "-c", c})
		}
	}
	total := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(total.Microseconds())/1000, "ms/1000cmds")
	if total > time.Second {
		b.Errorf("checking 1,000 commands took %s; want under 1s", total)
	}
}

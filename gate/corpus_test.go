package gate

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpusCase is one command of a corpus with the verdict it must get.
type corpusCase struct {
	Src   string `json:"src"`
	DCG   string `json:"dcg"`   // the source guard's verdict, for the record
	Want  string `json:"want"`  // the gate's: allow or deny (deny counts confirm too)
	Class string `json:"class"` // danger, benign, or out (asserted, not counted in the rates)
	Cmd   string `json:"cmd"`
	Note  string `json:"note"`
	Set   string `json:"set"` // unseen corpora: tune (fixed against) or held (held out)
}

// loadCorpus reads a corpus: JSON lines (*.jsonl) or one benign command a
// line (*.txt); # starts a comment line in both.
func loadCorpus(t testing.TB, file string) []corpusCase {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasSuffix(file, ".txt") {
			out = append(out, corpusCase{Src: filepath.Base(file) + ":" + itoa(n), Want: "allow", Class: "benign", Cmd: line})
			continue
		}
		var c corpusCase
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%s:%d: %v", file, n, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(n int) string {
	var b []byte
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestCorpora runs the ported guard corpus and the benign corpus as table
// tests and reports the rates issue 24 asks for: dangerous in-class
// commands denied or sent to confirm, benign commands refused.
func TestCorpora(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*.jsonl")
	txt, _ := filepath.Glob("testdata/corpus/*.txt")
	files = append(files, txt...)
	if len(files) < 2 {
		t.Fatalf("corpora missing: %v", files)
	}
	g := mustGate(t, testConfig())
	for _, file := range files {
		cases := loadCorpus(t, file)
		var danger, caught, benign, refused int
		for _, c := range cases {
			d := g.CheckShell(c.Cmd)
			got := "allow"
			if d.Verdict != Allow {
				got = "deny"
			}
			switch c.Class {
			case "danger":
				danger++
				if got == "deny" {
					caught++
				}
			case "benign":
				benign++
				if got == "deny" {
					refused++
				}
			}
			if got != c.Want {
				t.Errorf("%s: CheckShell(%q) = %s (%s: %s); want %s %s", c.Src, c.Cmd, d.Verdict, d.Rule, d.Reason, c.Want, c.Note)
			}
		}
		t.Logf("%s: %d cases; dangerous in class %d, denied or confirmed %d (%.1f%%); benign %d, refused %d (%.2f%%)",
			filepath.Base(file), len(cases), danger, caught, pct(caught, danger), benign, refused, pct(refused, benign))
	}
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

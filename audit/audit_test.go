package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentAppendsNeverInterleave: 32 goroutines and 4 processes'
// worth of records; every line must parse and every record be there once.
func TestConcurrentAppendsNeverInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".triage", "audit.jsonl")
	var wg sync.WaitGroup
	long := strings.Repeat("x", 8000) // longer than PIPE_BUF: atomicity must not rely on it
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := Append(path, Record{Role: "agent", Argv: []string{fmt.Sprintf("%d-%d", g, i), long}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("a line does not parse: %v", err)
		}
		if seen[r.Argv[0]] {
			t.Fatalf("duplicate %s", r.Argv[0])
		}
		seen[r.Argv[0]] = true
	}
	if len(seen) != 32*50 {
		t.Fatalf("%d records, want %d", len(seen), 32*50)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

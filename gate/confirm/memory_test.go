package confirm

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
)

func TestMemoryExactMatch(t *testing.T) {
	var m Memory // the zero value is ready
	if m.Allowed("rm") {
		t.Fatal("empty memory allows")
	}
	if !m.Remember("rm") {
		t.Fatal("Remember(rm) refused")
	}
	if !m.Remember(Quote([]string{"git", "status"})) {
		t.Fatal("Remember(git status) refused")
	}
	tests := []struct {
		key  string
		want bool
	}{
		{"rm", true},
		{"git status", true},
		{"rm -rf x", false}, // a bare name never stands for the name with arguments
		{"rm ", false},      // no trimming
		{"RM", false},       // no case folding
		{"git", false},      // no prefix matching
		{"git status -s", false},
		{"git  status", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := m.Allowed(tt.key); got != tt.want {
			t.Errorf("Allowed(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
	if m.Remember("") {
		t.Error("Remember(\"\") accepted")
	}
	if m.Allowed("") {
		t.Error("the empty command line is allowed")
	}
}

func TestMemoryNil(t *testing.T) {
	var m *Memory
	if m.Remember("ls") || m.Allowed("ls") {
		t.Fatal("a nil Memory remembers")
	}
}

func TestMemoryConcurrent(t *testing.T) {
	var m Memory
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				k := strconv.Itoa(i) + " " + strconv.Itoa(j)
				m.Remember(k)
				if !m.Allowed(k) {
					t.Errorf("lost %q", k)
				}
				m.Allowed("other")
			}
		}()
	}
	wg.Wait()
}

func TestDecideWithoutTerminal(t *testing.T) {
	ctx := context.Background()
	p := Prompt{Command: "rm -rf x", Rule: "rm: deletes"}

	ok, err := Decide(ctx, nil, nil, p)
	if ok || !errors.Is(err, ErrNoTerminal) {
		t.Fatalf("no terminal: ok=%v err=%v, want deny with ErrNoTerminal", ok, err)
	}

	var m Memory
	m.Remember("rm -rf x")
	if ok, err := Decide(ctx, nil, &m, p); !ok || err != nil {
		t.Fatalf("session-allowed: ok=%v err=%v, want allow without asking", ok, err)
	}
	if ok, _ := Decide(ctx, nil, &m, Prompt{Command: "rm -rf y"}); ok {
		t.Fatal("another command line was allowed by the session memory")
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if ok, err := Decide(cctx, nil, &m, p); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: ok=%v err=%v, want deny", ok, err)
	}
}

func TestAnswerZeroIsNo(t *testing.T) {
	var a Answer
	if a != No || a.String() != "no" || Once.String() != "once" || Session.String() != "session" {
		t.Fatalf("zero Answer %v", a)
	}
	var asker *Asker
	if ans, err := asker.Ask(context.Background(), Prompt{}); ans != No || !errors.Is(err, ErrNoTerminal) {
		t.Fatalf("nil Asker: %v %v", ans, err)
	}
}

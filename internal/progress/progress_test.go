package progress

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
		gap   time.Duration // between steps
		want  string
	}{
		{"nothing", nil, 0, ""},
		{"one step", []string{"unpacking"}, 0, "\runpacking\x1b[K\n"},
		{"throttled: the last step before Done is shown", []string{"a", "b", "c"}, time.Millisecond, "\ra\x1b[K\rc\x1b[K\n"},
		{"slow steps each shown", []string{"a", "b"}, time.Second, "\ra\x1b[K\rb\x1b[K\n"},
		{"control characters dropped", []string{"img\x1b[2J\nx"}, 0, "\rimg[2Jx\x1b[K\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			clock := time.Unix(0, 0)
			l := NewLine(&b, 200*time.Millisecond)
			l.now = func() time.Time { return clock }
			for _, s := range tc.steps {
				l.Step("%s", s)
				clock = clock.Add(tc.gap)
			}
			l.Done()
			if b.String() != tc.want {
				t.Fatalf("%q, want %q", b.String(), tc.want)
			}
		})
	}
}

// TestNothingOffATerminal: a pipe, or show off (--json), gets no
// progress; a context without a reporter reports nowhere.
func TestNothingOffATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, show := range []bool{true, false} {
		p := ForTerminal(w, show)
		p.Step("unpacking %d", 1)
		p.Done()
	}
	w.Close()
	if b, _ := io.ReadAll(r); len(b) != 0 {
		t.Fatalf("a pipe got %q", b)
	}
	From(context.Background()).Step("x") // no reporter: nothing, no panic
	var b bytes.Buffer
	From(With(context.Background(), NewLine(&b, 0))).Step("x")
	if !strings.Contains(b.String(), "x") {
		t.Fatalf("the context's reporter got %q", b.String())
	}
}

func TestCounterAndBytes(t *testing.T) {
	var seen []int64
	c := &Counter{R: strings.NewReader(strings.Repeat("x", 3000)), Report: func(n int64) { seen = append(seen, n) }}
	buf := make([]byte, 1024)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	if len(seen) != 3 || seen[2] != 3000 {
		t.Fatalf("reports %v", seen)
	}
	for n, want := range map[int64]string{5: "5 B", 2048: "2 KiB", 5 << 20: "5 MiB", 3 << 29: "1.5 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

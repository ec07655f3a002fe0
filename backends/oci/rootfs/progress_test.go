package rootfs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/progress"
)

// recorder keeps the steps a reporter was given.
type recorder struct {
	mu    sync.Mutex
	steps []string
	done  int
}

func (r *recorder) Step(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, fmt.Sprintf(format, args...))
}

func (r *recorder) Done() { r.mu.Lock(); r.done++; r.mu.Unlock() }

// TestUnpackReportsLayers: unpacking an image root reports each layer (n
// of m) with its bytes, and ends its line; a second use unpacks nothing
// and reports nothing.
func TestUnpackReportsLayers(t *testing.T) {
	layers := testLayers(t)
	p := dockerSaveTar(t, layers, configFor(layers))
	c := &Cache{Dir: t.TempDir()}
	rec := &recorder{}
	ctx := progress.With(context.Background(), rec)
	if _, err := c.EnsureArchive(ctx, p, ""); err != nil {
		t.Fatal(err)
	}
	// The count is the manifest's (docker save's may list a layer twice).
	var n int
	if len(rec.steps) > 0 {
		_, _ = fmt.Sscanf(rec.steps[0], "unpacking the image root: layer 1 of %d,", &n)
	}
	for i := 1; i <= max(n, 1); i++ {
		want := fmt.Sprintf("layer %d of %d, ", i, n)
		if n < len(layers) || !containsStep(rec.steps, want) {
			t.Errorf("no step %q in %q", want, rec.steps)
		}
	}
	if rec.done == 0 {
		t.Error("the progress line was not ended")
	}
	again := &recorder{}
	if _, err := c.EnsureArchive(progress.With(context.Background(), again), p, ""); err != nil {
		t.Fatal(err)
	}
	if len(again.steps) != 0 {
		t.Errorf("a cached root reported %q", again.steps)
	}
}

func containsStep(steps []string, s string) bool {
	for _, x := range steps {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

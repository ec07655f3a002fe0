package guard

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A request too large to show the model whole is blocked unasked.
func TestJudgeRequestTooLarge(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	g := mustNew(t, testConfig(t, srv.URL))
	req := sampleRequest()
	req.Scripts = []Script{{Path: "huge.py", Content: strings.Repeat("x", maxRequestBytes)}}
	v := judge(t, g, req)
	if v.Allowed || !strings.Contains(v.Reason, "cannot judge") || srv.hits.Load() != 0 {
		t.Fatalf("%+v hits %d", v, srv.hits.Load())
	}
}

func TestDecideThresholds(t *testing.T) {
	g := mustNew(t, Config{Model: "m", URL: "http://127.0.0.1:1", MinSafe: 0, MaxRisk: 1})
	if v := g.decide(Scores{}); !v.Allowed {
		t.Errorf("min_safe 0, max_risk 1: %s", v.Reason)
	}
	g = mustNew(t, Config{Model: "m", URL: "http://127.0.0.1:1", MinSafe: 1, MaxRisk: 0})
	if v := g.decide(Scores{Safe: 1}); !v.Allowed {
		t.Errorf("strictest, perfect scores: %s", v.Reason)
	}
	if v := g.decide(Scores{Safe: 1, Injection: 0.01}); v.Allowed {
		t.Error("strictest allowed a risk")
	}
}

// Judge is safe for concurrent use: every verdict is logged whole.
func TestJudgeConcurrent(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := cachedConfig(t, srv.URL)
	g := mustNew(t, cfg)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := sampleRequest()
			req.Command = fmt.Sprintf("python3 repros/%d.py", i%6)
			v, err := g.Judge(t.Context(), req)
			if err != nil || !v.Allowed {
				t.Errorf("%+v %v", v, err)
			}
		})
	}
	wg.Wait()
	if lines := readLog(t, cfg.LogPath); len(lines) != n {
		t.Fatalf("%d log lines", len(lines))
	}
	if got := len(newCache(cfg.CachePath, testSecret).readFile()); got != 6 {
		t.Fatalf("%d cache entries", got)
	}
}

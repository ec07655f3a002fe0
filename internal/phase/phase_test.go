package phase

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOffWithoutEnv(t *testing.T) {
	t.Setenv(EnvVar, "")
	tr, err := FromEnv("cli")
	if err != nil || tr != nil {
		t.Fatalf("FromEnv with %s unset = %v, %v; want nil, nil", EnvVar, tr, err)
	}
	ctx := With(context.Background(), tr)
	if From(ctx) != nil {
		t.Fatal("a nil tracer was put in the context")
	}
	Begin(ctx, "x")() // no tracer: must not panic
	Mark(ctx, "x")
	Span(ctx, "x", time.Now(), time.Now())
}

func TestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	t.Setenv(EnvVar, path)
	tr, err := FromEnv("cli")
	if err != nil {
		t.Fatal(err)
	}
	ctx := With(context.Background(), tr)
	Mark(ctx, "main")
	end := Begin(ctx, "gate")
	time.Sleep(2 * time.Millisecond)
	end()
	Span(ctx, "never-started", time.Time{}, time.Now()) // not observed: no line
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, e)
	}
	if len(got) != 2 || got[0].Phase != "main" || got[1].Phase != "gate" {
		t.Fatalf("events = %+v, want main then gate", got)
	}
	g := got[1]
	if g.Proc != "cli" || g.PID != os.Getpid() || g.DurMS < 2 || g.StartMS < got[0].StartMS || g.OriginUnixNS == 0 {
		t.Errorf("gate event = %+v", g)
	}
}

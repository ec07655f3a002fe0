package phase

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

func TestRelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	t.Setenv(EnvVar, path)
	tr, err := FromEnv("cli")
	if err != nil {
		t.Fatal(err)
	}
	ctx := With(context.Background(), tr)
	now := time.Now().UnixNano()
	good := func(name string) string {
		b, _ := json.Marshal(Event{Proc: "x", PID: 1, Phase: name, StartMS: 1, DurMS: 2, OriginUnixNS: now})
		return string(b)
	}
	in := strings.Join([]string{
		good("enter"),
		good("Bad Name\u001b[2J"), // not a phase name
		`{"phase":"x","start_ms":-1,"origin_unix_ns":1}`, // negative, origin long ago
		"not json",
		good("restrict.seccomp"),
	}, "\n") + "\n"
	Relay(ctx, strings.NewReader(in), "helper", 42)
	Relay(ctx, strings.NewReader(strings.Repeat("x", 2*relayMaxLine)+"\n"+good("after-a-long-line")+"\n"), "helper", 42)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.Proc != "helper" || e.PID != 42 {
			t.Errorf("relayed %+v: want proc helper, pid 42", e)
		}
		got = append(got, e.Phase)
	}
	if want := []string{"enter", "restrict.seccomp"}; !slices.Equal(got, want) {
		t.Errorf("relayed phases %q, want %q", got, want)
	}
}

package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a guard command (see helperMain).
const helperEnv = "GUARD_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain is the fake command transport.
func helperMain(mode string) int {
	switch mode {
	case "answer": // check the request, print GUARD_TEST_ANSWER
		var req chatRequest
		if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil || len(req.Messages) != 2 || req.Model == "" {
			fmt.Fprintln(os.Stderr, "bad request on stdin")
			return 5
		}
		var data userData
		if err := json.Unmarshal([]byte(req.Messages[1].Content), &data); err != nil || data.Command == "" {
			fmt.Fprintln(os.Stderr, "bad user data")
			return 5
		}
		fmt.Print(os.Getenv("GUARD_TEST_ANSWER"))
		return 0
	case "fail":
		fmt.Fprint(os.Stderr, "model crashed\nsecond line")
		return 3
	case "sleep":
		time.Sleep(time.Minute)
		return 0
	case "sleep-child": // a grandchild holding stdout open
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=sleep")
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			return 6
		}
		if f := os.Getenv("GUARD_TEST_PIDFILE"); f != "" {
			_ = os.WriteFile(f, []byte(fmt.Sprint(child.Process.Pid)), 0o600)
		}
		time.Sleep(time.Minute)
		return 0
	case "flood":
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 64 { // 4 MiB
			if _, err := os.Stdout.Write(chunk); err != nil {
				return 7
			}
		}
		return 0
	}
	return 9
}

// fakeModel is an OpenAI-compatible server on 127.0.0.1.
type fakeModel struct {
	*httptest.Server
	hits atomic.Int32
}

func newFakeModel(t *testing.T, h http.HandlerFunc) *fakeModel {
	t.Helper()
	f := &fakeModel{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// answering serves content as choices[0].message.content.
func answering(content string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(chatJSON(content)))
	}
}

func chatJSON(content string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "x", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	})
	return string(b)
}

const (
	allowAnswer = `{"safe":0.9,"exfiltration":0.1,"destructive":0.05,"injection":0.02}`
	blockAnswer = `{"safe":0.1,"exfiltration":0.98,"destructive":0.2,"injection":0.6}`
)

var testSecret = bytes.Repeat([]byte("k"), 32)

// testConfig is DefaultConfig against url with a log in a temp workspace.
func testConfig(t *testing.T, url string) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Model = "test-model"
	cfg.URL = url + "/v1"
	cfg.Timeout = 5 * time.Second
	cfg.LogPath = filepath.Join(t.TempDir(), ".triage", "guard.log")
	return cfg
}

func mustNew(t *testing.T, cfg Config) *Guard {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func sampleRequest() Request {
	return Request{
		Command: "python3 repros/1.py",
		Task:    "Reproduce issue #1",
		Scripts: []Script{{Path: "repros/1.py", Content: "print('hi')\n"}},
	}
}

// judge runs Judge, failing on a cache/log error.
func judge(t *testing.T, g *Guard, req Request) Verdict {
	t.Helper()
	v, err := g.Judge(context.Background(), req)
	if err != nil {
		t.Fatalf("Judge error: %v", err)
	}
	checkVerdictShape(t, v)
	return v
}

// checkVerdictShape holds for every verdict: one-line reason, present
// exactly when blocked; an unavailable verdict has no scores.
func checkVerdictShape(t *testing.T, v Verdict) {
	t.Helper()
	if v.Allowed != (v.Reason == "") {
		t.Errorf("allowed=%v with reason %q", v.Allowed, v.Reason)
	}
	if strings.ContainsAny(v.Reason, "\r\n") {
		t.Errorf("reason is not one line: %q", v.Reason)
	}
	if strings.HasPrefix(v.Reason, "guard unavailable: ") {
		if v.Scores != nil || !strings.HasSuffix(v.Reason, "; not running it") {
			t.Errorf("unavailable verdict malformed: %+v", v)
		}
	}
}

// within bounds a call that must never block.
func withinTime(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("blocked for more than %s", d)
	}
}

func readAllString(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

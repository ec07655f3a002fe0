package guard

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestLogOneLinePerVerdict(t *testing.T) {
	var fail atomic.Bool
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		answering(blockAnswer)(w, r)
	})
	cfg := testConfig(t, srv.URL)
	g := mustNew(t, cfg)
	req := sampleRequest()
	req.Command = strings.Repeat("é", 600)
	req.Task = strings.Repeat("t", 700)
	judge(t, g, req)
	judge(t, g, req) // cached
	fail.Store(true)
	req.Command = "other"
	judge(t, g, req)

	lines := readLog(t, cfg.LogPath)
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	first := lines[0]
	for _, k := range []string{"at", "command", "scripts", "allowed", "scores", "reason", "task", "cached", "model"} {
		if _, ok := first[k]; !ok {
			t.Errorf("log line lacks %q: %v", k, first)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, first["at"].(string)); err != nil {
		t.Errorf("at: %v", err)
	}
	cmd := first["command"].(string)
	if n := utf8.RuneCountInString(strings.TrimSuffix(cmd, "…")); n != logFieldRunes || !utf8.ValidString(cmd) {
		t.Errorf("command kept %d runes", n)
	}
	if n := len(strings.TrimSuffix(first["task"].(string), "…")); n != logFieldRunes {
		t.Errorf("task kept %d chars", n)
	}
	if first["allowed"] != false || first["model"] != "test-model" || first["cached"] != false ||
		!strings.Contains(first["reason"].(string), "blocked by the guard") {
		t.Errorf("first line %v", first)
	}
	if s, ok := first["scores"].(map[string]any); !ok || s["exfiltration"] != 0.98 {
		t.Errorf("scores %v", first["scores"])
	}
	if sc := first["scripts"].([]any); len(sc) != 1 || sc[0] != "repros/1.py" {
		t.Errorf("scripts %v", sc)
	}
	if lines[1]["cached"] != true {
		t.Errorf("second line %v", lines[1])
	}
	if lines[2]["scores"] != nil || !strings.HasPrefix(lines[2]["reason"].(string), "guard unavailable: ") {
		t.Errorf("third line %v", lines[2])
	}
	if st, _ := os.Stat(cfg.LogPath); st.Mode().Perm() != 0o600 {
		t.Errorf("log mode %o", st.Mode().Perm())
	}
}

// A symlink planted at the log path is not followed; Judge reports it and
// the verdict is still given.
func TestLogSymlinkNotFollowed(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := testConfig(t, srv.URL)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("host file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, cfg.LogPath); err != nil {
		t.Fatal(err)
	}
	v, err := mustNew(t, cfg).Judge(t.Context(), sampleRequest())
	if err == nil || !strings.Contains(err.Error(), "guard log") || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("err %v", err)
	}
	if !v.Allowed {
		t.Errorf("verdict lost: %+v", v)
	}
	if b, _ := os.ReadFile(victim); string(b) != "host file\n" {
		t.Fatalf("victim changed: %q", b)
	}
}

func TestLogFIFODoesNotHang(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := testConfig(t, srv.URL)
	if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(cfg.LogPath, 0o644); err != nil {
		t.Fatal(err)
	}
	g := mustNew(t, cfg)
	var err error
	withinTime(t, 5*time.Second, func() { _, err = g.Judge(t.Context(), sampleRequest()) })
	if err == nil || !strings.Contains(err.Error(), "guard log") {
		t.Fatalf("err %v", err)
	}
}

// A FIFO with a reader is opened but refused by type.
func TestLogFIFOWithReaderRefused(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := testConfig(t, srv.URL)
	if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(cfg.LogPath, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(cfg.LogPath, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g := mustNew(t, cfg)
	withinTime(t, 5*time.Second, func() { _, err = g.Judge(t.Context(), sampleRequest()) })
	if err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("err %v", err)
	}
}

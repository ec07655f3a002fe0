package selftest

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// A fake decision model on loopback: high exfiltration for anything that
// pipes into curl, low otherwise.
func judgingModel(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		content := `{"safe":0.9,"exfiltration":0.05,"destructive":0.05,"injection":0.05}`
		if strings.Contains(string(b), "curl") {
			content = `{"safe":0.05,"exfiltration":0.98,"destructive":0.2,"injection":0.3}`
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": content}}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestGuardQuestions(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String() + "/v1"
	l.Close()
	cases := []struct {
		name string
		url  string
		want []string // statuses of GATE-01, GATE-02, GATE-03
	}{
		{"a guard that judges", judgingModel(t), []string{StatusOK, StatusOK, StatusOK}},
		{"an unreachable guard proves nothing", closed, []string{StatusFail, StatusInconclusive, StatusOK}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "repros"), 0o755); err != nil {
				t.Fatal(err)
			}
			host := policy.Host{Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root, Env: []string{"PATH=/usr/bin:/bin"}}
			p, err := policy.Build(config.Default(root), "agent", host, policy.Options{Backend: "docker"})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			p.Gate.Guard = policy.Guard{Enabled: true, Model: "m", MinSafe: 0.5, MaxRisk: 0.7, URL: c.url, Timeout: 2e9,
				LogPath: dir + "/guard.log", CachePath: dir + "/cache.json", KeyPath: dir + "/key"}
			// As a backend with bounded_writes stages the writable paths.
			p.Staging = policy.Staging{Size: 1 << 20, Inodes: 100}
			res := guardResults(context.Background(), p)
			if len(res) != 3 || res[0].Status != c.want[0] || res[1].Status != c.want[1] || res[2].Status != c.want[2] {
				t.Fatalf("results %+v, want statuses %v", res, c.want)
			}
			// Unstaged, the sandbox writes the host's directory: nothing
			// of its own to hide from the guard.
			p.Staging = policy.Staging{}
			if res := guardResults(context.Background(), p); res[2].Status != StatusNotApplicable {
				t.Errorf("unstaged: GATE-03 %+v", res[2])
			}
		})
	}
	// Off: no questions, no rows.
	root := t.TempDir()
	p, _ := policy.Build(config.Default(root), "agent", policy.Host{Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root}, policy.Options{Backend: "docker"})
	if res := guardResults(context.Background(), p); len(res) != 0 {
		t.Errorf("guard off, results %+v", res)
	}
}

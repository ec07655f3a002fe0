package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/gate/confirm"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// fakeModel answers chat completions with fixed scores.
func fakeModel(t *testing.T, safe, exfil float64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		content := fmt.Sprintf(`{"safe":%v,"exfiltration":%v,"destructive":0.1,"injection":0.1}`, safe, exfil)
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": content}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedURL is a loopback address nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

func withGuard(t *testing.T, p *policy.Policy, url string) {
	t.Helper()
	dir := t.TempDir()
	p.Gate.Guard = policy.Guard{Enabled: true, Model: "m", MinSafe: 0.5, MaxRisk: 0.7, URL: url, Timeout: 2e9,
		LogPath: dir + "/guard.log", CachePath: dir + "/cache.json", KeyPath: dir + "/cache.key"}
}

// The gate judges before any sandbox exists: a refused command starts
// nothing, is a DeniedError saying not to retry, and is audited with its
// verdict.
func TestGateRefusesBeforeAnySandbox(t *testing.T) {
	cases := []struct {
		name    string
		argv    []string
		setup   func(t *testing.T, p *policy.Policy)
		confirm ConfirmFunc
		runs    bool
		want    string // in the refusal
	}{
		{name: "deny list", argv: []string{"sh", "-c", "X=1 /bin/rm -fr /"}, want: "rule recursive-delete"},
		{name: "sudo", argv: []string{"sudo", "ls"}, want: "rule sudo"},
		{name: "allowed", argv: []string{"git", "log"}, runs: true},
		{name: "guard unreachable", argv: []string{"git", "log"}, want: "guard unavailable",
			setup: func(t *testing.T, p *policy.Policy) { withGuard(t, p, closedURL(t)) }},
		{name: "guard without a way to reach it", argv: []string{"git", "log"}, want: "set url",
			setup: func(t *testing.T, p *policy.Policy) { withGuard(t, p, "") }},
		{name: "guard blocks", argv: []string{"git", "log"}, want: "exfiltration",
			setup: func(t *testing.T, p *policy.Policy) { withGuard(t, p, fakeModel(t, 0.9, 0.95).URL+"/v1") }},
		{name: "guard allows", argv: []string{"git", "log"}, runs: true,
			setup: func(t *testing.T, p *policy.Policy) { withGuard(t, p, fakeModel(t, 0.9, 0.1).URL+"/v1") }},
		{name: "confirm rule, nobody to ask", argv: []string{"git", "push"}, want: "confirmation",
			setup: func(t *testing.T, p *policy.Policy) { p.Gate.ConfirmRules = []string{"git-remote"} }},
		{name: "confirm rule, operator says no", argv: []string{"git", "push"}, want: "confirmation",
			setup:   func(t *testing.T, p *policy.Policy) { p.Gate.ConfirmRules = []string{"git-remote"} },
			confirm: func(context.Context, confirm.Prompt) (bool, error) { return false, nil }},
		{name: "confirm rule, operator says yes", argv: []string{"git", "push"}, runs: true,
			setup:   func(t *testing.T, p *policy.Policy) { p.Gate.ConfirmRules = []string{"git-remote"} },
			confirm: func(context.Context, confirm.Prompt) (bool, error) { return true, nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPolicy(t, "agent")
			if c.setup != nil {
				c.setup(t, p)
			}
			b := newFake()
			var out strings.Builder
			res, err := Run(context.Background(), b, Request{Policy: p, Command: backends.Command{Argv: c.argv},
				Streams: backends.Streams{Stdout: &out, Stderr: &out}, Redactor: newRedactor(), Confirm: c.confirm})
			if c.runs {
				if err != nil || b.Starts() != 1 {
					t.Fatalf("err %v, starts %d; want it to run", err, b.Starts())
				}
				if res.Gate.Verdict != "allow" {
					t.Errorf("verdict %+v", res.Gate)
				}
				return
			}
			d, ok := Denied(err)
			if !ok {
				t.Fatalf("err = %v, want a DeniedError", err)
			}
			if b.Starts() != 0 {
				t.Errorf("a sandbox was started for a refused command")
			}
			if !strings.Contains(d.Message, c.want) || !strings.Contains(d.Message, "Do not retry it in another form.") {
				t.Errorf("message %q lacks %q", d.Message, c.want)
			}
			recs := readAudit(t, p.AuditLog)
			if len(recs) != 1 || !strings.HasPrefix(recs[0].Gate, "deny") || recs[0].ExitCode != exitcode.Refused {
				t.Errorf("audit %+v", recs)
			}
		})
	}
}

// A session's later commands are judged too.
func TestSessionJudgesEveryCommand(t *testing.T) {
	p := newPolicy(t, "agent")
	b := newFake()
	sess, err := Start(context.Background(), b, p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	if _, err := sess.Exec(context.Background(), Request{Command: backends.Command{Argv: []string{"true"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = sess.Exec(context.Background(), Request{Command: backends.Command{Argv: []string{"bash", "-c", "git push --force"}}})
	if _, ok := Denied(err); !ok {
		t.Fatalf("err = %v, want denied", err)
	}
	if n := len(b.Shared.Execs()); n != 1 {
		t.Errorf("%d commands reached the sandbox, want 1", n)
	}
}

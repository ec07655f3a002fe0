package sandbox

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/gate/guard"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// viewPolicy is a workspace whose root is a skeleton (NOTES.md writable,
// README.md and src listed read-only), with a discarded checkout co, a
// staged writable repros, a read-only data directory and a masked .env.
func viewPolicy(t *testing.T) (*policy.Policy, string) {
	t.Helper()
	ws := t.TempDir()
	for _, d := range []string{"co/src", "repros/sub", "src", "data"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc", filepath.Join(ws, "co", "etc")); err != nil {
		t.Fatal(err)
	}
	j := func(rel string) string { return filepath.Join(ws, rel) }
	p := &policy.Policy{WorkspaceRoot: ws,
		Mounts: []policy.Mount{
			{Path: j("NOTES.md"), Kind: "file"},
			{Path: j("README.md"), ReadOnly: true, Kind: "file", Listed: true},
			{Path: j("src"), ReadOnly: true, Kind: "dir", Listed: true},
			{Path: j("co"), ReadOnly: true, Discard: true, Kind: "dir"},
			{Path: j("repros"), Kind: "dir"},
			{Path: j("data"), ReadOnly: true, Kind: "dir", Hidden: []string{j("data/base")}},
			{Path: "/usr", ReadOnly: true, Kind: "dir", System: true},
		},
		Unreadable: []string{j(".env")},
		Staging:    policy.Staging{Size: 1 << 20, Inodes: 100, Skeletons: []string{ws}},
	}
	return p, ws
}

// TestScriptView: in a session a path the sandbox may hold its own version
// of is refused; in a fresh sandbox every mounted path is the host's.
func TestScriptView(t *testing.T) {
	p, ws := viewPolicy(t)
	cases := []struct {
		rel         string
		fresh, kept guard.Origin
		why         string // in the kept refusal
	}{
		{rel: "co/run.sh", fresh: guard.FromHost, kept: guard.FromSandbox, why: "overlay"},
		{rel: "co/new/deep.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "overlay"},
		{rel: "co/etc", fresh: guard.FromHost, kept: guard.FromSandbox, why: "overlay"}, // a symlink: no directory of the host
		{rel: "co", fresh: guard.FromHost, kept: guard.FromHost},                        // the mount point, a directory
		{rel: "co/src", fresh: guard.FromHost, kept: guard.FromHost},                    // a directory on the host: names no script
		{rel: "repros/1.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "own copy"},
		{rel: "repros/sub", fresh: guard.FromHost, kept: guard.FromHost},
		{rel: "NOTES.md", fresh: guard.FromHost, kept: guard.FromSandbox, why: "own copy"},             // a writable file
		{rel: "planted.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "own copy"},           // a new entry of the skeleton
		{rel: "README.md", fresh: guard.FromHost, kept: guard.FromHost},                                // listed read-only
		{rel: "src/main.py", fresh: guard.FromHost, kept: guard.FromHost},                              // under a listed directory
		{rel: "data/x.py", fresh: guard.FromHost, kept: guard.FromHost},                                // read-only
		{rel: ".env", fresh: guard.Hidden, kept: guard.Hidden},                                         // masked
		{rel: "../elsewhere/x.py", fresh: guard.Hidden, kept: guard.Hidden},                            // not mounted
		{rel: "/usr/lib/python3/x.py", fresh: guard.FromHost, kept: guard.FromHost},                    // system, read-only
		{rel: "/tmp/x.py", fresh: guard.Hidden, kept: guard.Hidden},                                    // scratch: never the host's
		{rel: "co/../repros/1.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "own copy"},    // cleaned first
		{rel: "data/../co/run.sh", fresh: guard.FromHost, kept: guard.FromSandbox, why: "overlay"},     // cleaned first
		{rel: "repros/../NOTES.md", fresh: guard.FromHost, kept: guard.FromSandbox, why: "own copy"},   // cleaned first
		{rel: "src/../planted.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "own copy"},    // cleaned first
		{rel: "co/src/../run.sh", fresh: guard.FromHost, kept: guard.FromSandbox, why: "overlay"},      // cleaned first
		{rel: "README.md/../co/x", fresh: guard.FromHost, kept: guard.FromSandbox, why: "overlay"},     // cleaned first
		{rel: "repros/sub/../../co/a", fresh: guard.FromHost, kept: guard.FromSandbox, why: "overlay"}, // cleaned first
		{rel: "c?/run.sh", fresh: guard.FromHost, kept: guard.FromSandbox, why: "pattern"},             // the shell expands it
		{rel: "*/x.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "pattern"},
		{rel: "c[o]/x.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "pattern"},
		{rel: "{co,data}/x.py", fresh: guard.FromHost, kept: guard.FromSandbox, why: "pattern"},
		{rel: "NOTES.m?", fresh: guard.FromHost, kept: guard.FromSandbox, why: "pattern"}, // a writable file
		{rel: "c*", fresh: guard.FromHost, kept: guard.FromSandbox, why: "pattern"},       // a file planted in the root's skeleton
		{rel: "co/src/*", fresh: guard.FromHost, kept: guard.FromSandbox, why: "pattern"},
		{rel: "data/*.py", fresh: guard.FromHost, kept: guard.FromHost},  // under a read-only mount
		{rel: "src/*/x.py", fresh: guard.FromHost, kept: guard.FromHost}, // under a listed read-only directory
	}
	for _, c := range cases {
		path := c.rel
		if !filepath.IsAbs(path) {
			path = ws + "/" + c.rel
		}
		for _, k := range []struct {
			kept bool
			want guard.Origin
		}{{false, c.fresh}, {true, c.kept}} {
			// Each as a script the command runs.
			got, why := scriptView(p, k.kept, map[string]bool{filepath.Clean(path): true}, nil)(path)
			if got != k.want {
				t.Errorf("%s kept=%v: origin %d (%s), want %d", c.rel, k.kept, got, why, k.want)
			}
			if got == guard.FromSandbox && (!strings.Contains(why, c.why) || !strings.Contains(why, "outside the session")) {
				t.Errorf("%s: why %q lacks %q or what to do", c.rel, why, c.why)
			}
		}
	}
	// A path the command only names: never refused, and in a session the
	// host's copy is not shown (it may not be the session's).
	if err := os.WriteFile(filepath.Join(ws, "co", "README"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rel  string
		want guard.Origin
	}{
		{"co/log", guard.Hidden}, // git log in co: nothing there, not run
		{"co/README", guard.Hidden},
		{"co/*", guard.Hidden}, // a pattern not run: the guard shows nothing for it
	} {
		if got, why := scriptView(p, true, nil, nil)(ws + "/" + c.rel); got != c.want {
			t.Errorf("%s named only: %d (%s), want %d", c.rel, got, why, c.want)
		}
	}
	// A file the command line writes itself, where the sandbox may write:
	// the host's copy is not what it leaves there, so it is not shown; in
	// a session it is refused if the command also runs it.
	for _, c := range []struct {
		rel         string
		script      bool
		fresh, kept guard.Origin
	}{
		{"repros/x.sh", true, guard.Hidden, guard.FromSandbox},
		{"repros/out.txt", false, guard.Hidden, guard.Hidden},
		{"co/x.sh", true, guard.Hidden, guard.FromSandbox},
		{"data/x.sh", true, guard.FromHost, guard.FromHost}, // read-only: the write fails, the host's runs
	} {
		path := ws + "/" + c.rel
		for _, k := range []struct {
			kept bool
			want guard.Origin
		}{{false, c.fresh}, {true, c.kept}} {
			if got, why := scriptView(p, k.kept, map[string]bool{path: c.script}, map[string]bool{path: true})(path); got != k.want {
				t.Errorf("%s written, kept=%v: %d (%s), want %d", c.rel, k.kept, got, why, k.want)
			}
		}
	}
	// Writable paths that are not staged are the host's own directory:
	// what the sandbox wrote is the host's copy.
	p.Staging = policy.Staging{}
	if got, why := scriptView(p, true, map[string]bool{ws + "/repros/1.py": true}, nil)(ws + "/repros/1.py"); got != guard.FromHost {
		t.Errorf("an unstaged writable path: %d (%s), want the host's", got, why)
	}
}

// TestGateRefusesScriptsASessionMayHold: with the guard on, a session's
// command naming a script in its checkout overlay is refused with one
// line naming it and what to do, and the model is not asked; the same
// command in a one-shot or pooled run is judged (the fake model allows
// it), and so is a library Session's first command, but not its second.
func TestGateRefusesScriptsASessionMayHold(t *testing.T) {
	p := newPolicy(t, "agent")
	co := filepath.Join(p.WorkspaceRoot, "co")
	if err := os.MkdirAll(co, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(co, "run.sh"), []byte("echo benign\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Mounts = append(p.Mounts, policy.Mount{Path: co, ReadOnly: true, Discard: true, Kind: "dir", Why: "project checkout"})
	var asked atomic.Int32
	withGuard(t, p, countingModel(t, &asked).URL+"/v1")
	argv := []string{"sh", "co/run.sh"}

	// One-shot: judged by the model, runs.
	b := newFake()
	if _, err := Run(context.Background(), b, Request{Policy: p, Command: backends.Command{Argv: argv}, Redactor: newRedactor()}); err != nil || asked.Load() != 1 {
		t.Fatalf("one-shot: err %v, model asked %d times", err, asked.Load())
	}

	// A library Session: its first command is judged, its second refused.
	sess, err := Start(context.Background(), newFake(), p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	if _, err := sess.Exec(context.Background(), Request{Command: backends.Command{Argv: argv}, Redactor: newRedactor()}); err != nil {
		t.Fatalf("a session's first command: %v", err)
	}
	_, err = sess.Exec(context.Background(), Request{Command: backends.Command{Argv: argv}, Redactor: newRedactor()})
	checkUnjudged(t, err, "co/run.sh")

	// A pool's sandbox runs exactly one command, from the host's copy:
	// judged.
	p.Warm = policy.Warm{Pool: 2}
	res, err := Run(context.Background(), newFake(), Request{Policy: p, Command: backends.Command{Argv: argv}, Redactor: newRedactor()})
	if err != nil || res.Gate.Guard == nil || !res.Gate.Guard.Allowed {
		t.Fatalf("pool: err %v, verdict %+v", err, res.Gate)
	}

	// run --session: refused before any sandbox, audited.
	p.Warm = policy.Warm{Session: "g"}
	asked.Store(0)
	b = newFake()
	res, err = Run(context.Background(), b, Request{Policy: p, Command: backends.Command{Argv: []string{"sh", "-c", "sh co/new.sh"}}, Redactor: newRedactor()})
	checkUnjudged(t, err, "co/new.sh")
	if asked.Load() != 0 || b.Starts() != 0 || res.Gate.Verdict != "deny" || res.Gate.Guard == nil || res.Gate.Guard.Allowed {
		t.Errorf("model asked %d, starts %d, verdict %+v", asked.Load(), b.Starts(), res.Gate)
	}
	if recs := readAudit(t, p.AuditLog); len(recs) == 0 || !strings.Contains(recs[len(recs)-1].Gate, "cannot judge co/new.sh") {
		t.Errorf("audit: %+v", recs)
	}
	// Reached through a cd, quotes or a pattern: the shell's words, as the
	// gate parses them, are looked at too.
	for _, c := range []struct{ code, script string }{
		{"cd co && sh run.sh", "co/run.sh"},
		{`sh c""o/run.sh`, "co/run.sh"},
		{"sh c?/run.sh", "c?/run.sh"},
	} {
		_, err = Run(context.Background(), newFake(), Request{Policy: p, Command: backends.Command{Argv: []string{"sh", "-c", c.code}}, Redactor: newRedactor()})
		checkUnjudged(t, err, c.script)
	}
	// A directory of the checkout names no script.
	if _, err := Run(context.Background(), newFake(), Request{Policy: p, Command: backends.Command{Argv: []string{"ls", "co"}}, Redactor: newRedactor()}); err != nil {
		t.Errorf("ls co in a session: %v", err)
	}
}

// countingModel allows every command and counts the questions.
func countingModel(t *testing.T, asked *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		content := `{"safe":0.9,"exfiltration":0.1,"destructive":0.1,"injection":0.1}`
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": content}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func checkUnjudged(t *testing.T, err error, script string) {
	t.Helper()
	d, ok := Denied(err)
	if !ok {
		t.Fatalf("err = %v, want the guard's refusal of %s", err, script)
	}
	if !strings.HasPrefix(d.Message, "DENIED: the guard cannot judge "+script+": ") || !strings.Contains(d.Message, "run it outside the session") ||
		strings.Contains(d.Message, "\n") || strings.Contains(d.Message, "Do not retry") {
		t.Errorf("message %q", d.Message)
	}
}

// TestGuardNotShownAStaleCopy: a one-shot command that writes a script and
// then runs it is judged on its text; the host's older copy, which is not
// what runs, is not shown to the model.
func TestGuardNotShownAStaleCopy(t *testing.T) {
	p := newPolicy(t, "agent")
	repros := filepath.Join(p.WorkspaceRoot, "repros")
	if err := os.MkdirAll(repros, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repros, "x.sh"), []byte("echo STALE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Mounts = append(p.Mounts, policy.Mount{Path: repros, Kind: "dir", Why: "writable"})
	p.Staging = policy.Staging{Size: 1 << 20, Inodes: 100}
	var bodies []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		content := `{"safe":0.9,"exfiltration":0.1,"destructive":0.1,"injection":0.1}`
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": content}}}})
	}))
	t.Cleanup(srv.Close)
	withGuard(t, p, srv.URL+"/v1")
	for _, code := range []string{"cat > repros/x.sh <<'E'\necho NEW\nE\nsh repros/x.sh", "sh repros/x.sh"} {
		if _, err := Run(context.Background(), newFake(), Request{Policy: p, Command: backends.Command{Argv: []string{"sh", "-c", code}}, Redactor: newRedactor()}); err != nil {
			t.Fatalf("%q: %v", code, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || strings.Contains(bodies[0], "STALE") || !strings.Contains(bodies[1], "STALE") {
		t.Errorf("the model was shown %q", bodies)
	}
}

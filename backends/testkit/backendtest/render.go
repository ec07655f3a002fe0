package backendtest

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// Access is what a command does to a path, as RenderSuite asks a
// rendered artifact about it.
type Access string

// The accesses RenderSuite asks about.
const (
	Read  Access = "read"
	Write Access = "write"
)

// RenderHarness is the render-only part of the Suite: for a backend that
// cannot run here (seatbelt on Linux), what it renders for each policy,
// checked against the policy.
type RenderHarness struct {
	Backend backends.Backend
	// Policies are the policies to render, by name (each role's, say),
	// built for the backend with host directories of the caller's test.
	Policies func(t testing.TB) map[string]*policy.Policy
	// Allows says whether the artifact lets a command do access to path:
	// the backend's own reading of what it rendered (seatbelt's SBPL
	// evaluator). The Suite asks about every path of the policy.
	Allows func(a backends.Artifact, access Access, path string) (bool, error)
}

// renderArgv is the command every policy is rendered for; its words must
// be in the artifact.
var renderArgv = []string{"python3", "repro.py", "--flag=with space"}

// RenderSuite renders each of h's policies and checks, for each: the
// rendering is pure (the same bytes twice) and valid JSON, it carries the
// command's words, and by h.Allows: every writable path takes writes and
// reads, every mount reads, a read-only directory takes no write, every
// unreadable and masked path (and what is under it) neither reads nor
// takes writes, and the workspace root takes no new file unless it is
// itself writable.
func RenderSuite(t *testing.T, h RenderHarness) {
	runRender(t, h, func(name string, check func(testing.TB)) {
		t.Run(name, func(t *testing.T) { check(t) })
	})
}

func runRender(t testing.TB, h RenderHarness, run func(name string, check func(testing.TB))) {
	t.Helper()
	policies := h.Policies(t)
	names := make([]string, 0, len(policies))
	for n := range policies {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("the harness has no policy to render")
	}
	for _, name := range names {
		p := policies[name]
		run(name, func(t testing.TB) { checkRender(t, h, p) })
	}
}

// rendered is a policy's artifact and its JSON.
type rendered struct {
	a    backends.Artifact
	json []byte
}

func render(t testing.TB, b backends.Backend, p *policy.Policy) rendered {
	t.Helper()
	a, err := b.Render(p, backends.Command{Argv: renderArgv})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	raw, err := a.JSON()
	if err != nil {
		t.Fatalf("the artifact's JSON: %v", err)
	}
	if !json.Valid(raw) {
		t.Fatalf("the artifact's JSON is not valid JSON: %.200s", raw)
	}
	return rendered{a: a, json: raw}
}

func checkRender(t testing.TB, h RenderHarness, p *policy.Policy) {
	r := render(t, h.Backend, p)
	if again := render(t, h.Backend, p); !bytes.Equal(r.json, again.json) {
		t.Errorf("rendering the same policy twice gave two artifacts (first difference at byte %d)", firstDiff(string(r.json), string(again.json)))
	}
	for _, w := range renderArgv {
		quoted, _ := json.Marshal(w)
		if !bytes.Contains(r.json, quoted[1:len(quoted)-1]) {
			t.Errorf("the artifact lacks the command's word %s", quoted)
		}
	}
	if h.Allows == nil {
		t.Fatal("the harness has no Allows: what the artifact permits cannot be checked against the policy")
	}
	for _, e := range expectations(p) {
		got, err := h.Allows(r.a, e.access, e.path)
		if err != nil {
			t.Fatalf("Allows(%s %s): %v", e.access, e.path, err)
		}
		if got != e.allow {
			t.Errorf("%s %s is %s, want %s (%s)", e.access, e.path, verdict(got), verdict(e.allow), e.why)
		}
	}
}

func verdict(allow bool) string {
	if allow {
		return "allowed"
	}
	return "denied"
}

// expectation is one access the policy decides.
type expectation struct {
	access Access
	path   string
	allow  bool
	why    string
}

// expectations are what p decides of the paths it names.
func expectations(p *policy.Policy) []expectation {
	var out []expectation
	add := func(a Access, path string, allow bool, why string) {
		out = append(out, expectation{a, path, allow, why})
	}
	inside := func(m policy.Mount) string {
		if m.Kind == "dir" {
			return filepath.Join(m.Path, "new.txt")
		}
		return m.Path
	}
	writable := false
	for _, m := range p.Mounts {
		add(Read, inside(m), true, "mount "+m.Path)
		switch {
		case !m.ReadOnly:
			add(Write, inside(m), true, "writable "+m.Path)
			writable = writable || m.Path == p.WorkspaceRoot
		case m.Kind == "dir" && !m.Discard:
			add(Write, filepath.Join(m.Path, "evil.txt"), false, "read-only mount "+m.Path)
		}
	}
	for _, u := range slices.Concat(p.Unreadable, p.Masked) {
		for _, path := range []string{u, filepath.Join(u, "id_rsa")} {
			add(Read, path, false, "credential "+u)
			add(Write, path, false, "credential "+u)
		}
	}
	if p.WorkspaceRoot != "" && !writable {
		add(Write, filepath.Join(p.WorkspaceRoot, "evil.txt"), false, "the workspace root")
	}
	return out
}

// under reports whether path is dir or below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

package backendtest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// model is a reference renderer's artifact: what it allows is read off
// the policy's own lists. RenderSuite's control.
type model struct {
	Argv       []string       `json:"argv"`
	Mounts     []policy.Mount `json:"mounts"`
	Unreadable []string       `json:"unreadable"`
	Nonce      int64          `json:"nonce,omitempty"`
	bad        bool
}

func (m *model) JSON() ([]byte, error) {
	raw, err := json.Marshal(m)
	if m.bad {
		raw = raw[:len(raw)-1]
	}
	return raw, err
}

// Summary implements backends.Artifact (RenderSuite does not read it;
// conformance does).
func (m *model) Summary() (backends.Rendered, error) { return backends.Rendered{}, nil }

func modelRender(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
	return &model{Argv: cmd.Argv, Mounts: p.Mounts, Unreadable: slices.Concat(p.Unreadable, p.Masked)}, nil
}

func modelAllows(a backends.Artifact, access Access, path string) (bool, error) {
	m, ok := a.(*model)
	if !ok {
		return false, errors.New("not the model's artifact")
	}
	for _, u := range m.Unreadable {
		if under(path, u) {
			return false, nil
		}
	}
	for _, mt := range m.Mounts {
		if under(path, mt.Path) && (access == Read || !mt.ReadOnly) {
			return true, nil
		}
	}
	return false, nil
}

// renderPolicy is a reproducer's policy as the Suite sees it: writable
// outputs, a read-only checkout, credentials.
func renderPolicy() *policy.Policy {
	return &policy.Policy{
		WorkspaceRoot: "/ws", Workdir: "/ws",
		Mounts: []policy.Mount{
			{Path: "/ws/repros", Kind: "dir"},
			{Path: "/ws/NOTES.md", Kind: "file"},
			{Path: "/src/widgets", Kind: "dir", ReadOnly: true},
			{Path: "/ws/triage.toml", Kind: "file", ReadOnly: true},
		},
		Unreadable: []string{"/home/me/.ssh", "/home/me/.config/gh"},
		Masked:     []string{"/src/widgets/.env"},
	}
}

func recordRender(t *testing.T, h RenderHarness) []string {
	var fails []string
	runRender(t, h, func(name string, check func(testing.TB)) { fails = append(fails, record(t, name, check)...) })
	return fails
}

func renderHarness(render func(p *policy.Policy, cmd backends.Command) (backends.Artifact, error), allows func(backends.Artifact, Access, string) (bool, error)) RenderHarness {
	b := New()
	b.RenderFunc = render
	return RenderHarness{Backend: b, Allows: allows,
		Policies: func(testing.TB) map[string]*policy.Policy {
			return map[string]*policy.Policy{"reproducer": renderPolicy()}
		}}
}

// TestRenderSuiteControl: the reference renderer passes.
func TestRenderSuiteControl(t *testing.T) {
	if fails := recordRender(t, renderHarness(modelRender, modelAllows)); len(fails) > 0 {
		t.Fatalf("the reference renderer fails: %q", fails)
	}
}

// TestRenderSuiteFailsBrokenRenderers: each check fails against a renderer
// broken in what it checks.
func TestRenderSuiteFailsBrokenRenderers(t *testing.T) {
	var n atomic.Int64
	for _, tt := range []struct {
		name   string
		render func(p *policy.Policy, cmd backends.Command) (backends.Artifact, error)
		allows func(backends.Artifact, Access, string) (bool, error)
		want   string
	}{
		{"allows everything", modelRender, func(backends.Artifact, Access, string) (bool, error) { return true, nil },
			"credential /home/me/.ssh"},
		{"denies everything", modelRender, func(backends.Artifact, Access, string) (bool, error) { return false, nil },
			"writable /ws/repros"},
		{"read-only mounts take writes", func(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
			a, _ := modelRender(p, cmd)
			a.(*model).Mounts = slices.Clone(p.Mounts) // not the policy's
			for i := range a.(*model).Mounts {
				a.(*model).Mounts[i].ReadOnly = false
			}
			return a, nil
		}, modelAllows, "read-only mount /src/widgets"},
		{"drops the credentials", func(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
			a, _ := modelRender(p, cmd)
			a.(*model).Unreadable = nil
			return a, nil
		}, modelAllows, "credential /src/widgets/.env"},
		{"drops the command", func(p *policy.Policy, _ backends.Command) (backends.Artifact, error) {
			return modelRender(p, backends.Command{Argv: []string{"python3"}})
		}, modelAllows, "lacks the command's word"},
		{"not pure", func(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
			a, _ := modelRender(p, cmd)
			a.(*model).Nonce = n.Add(1)
			return a, nil
		}, modelAllows, "twice gave two artifacts"},
		{"not JSON", func(p *policy.Policy, cmd backends.Command) (backends.Artifact, error) {
			a, _ := modelRender(p, cmd)
			a.(*model).bad = true
			return a, nil
		}, modelAllows, "not valid JSON"},
		{"no reading of the artifact", modelRender, nil, "has no Allows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fails := recordRender(t, renderHarness(tt.render, tt.allows))
			if !slices.ContainsFunc(fails, func(f string) bool { return strings.Contains(f, tt.want) }) {
				t.Errorf("failures %q, want one saying %q", fails, tt.want)
			}
		})
	}
}

package seatbelt

import (
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func testInput() Input {
	return Input{Canon: macFS(nil, "/Users/me/work"), RunID: "r1", RunDir: "/var/folders/xy/T/ts/run-1"}
}

func TestRenderRefuses(t *testing.T) {
	good := func() *policy.Policy {
		return handPolicy(profiles.RoleAgent, "/Users/me", "/Users/me/work/ws", "/Users/me/src/p", policy.NetworkLoopback)
	}
	tests := []struct {
		name   string
		mutate func(p *policy.Policy, in *Input, cmd *backends.Command)
		want   string
	}{
		{"allow_all", func(p *policy.Policy, _ *Input, _ *backends.Command) { p.AllowAll = true }, "allow_all has no sandbox"},
		{"image root", func(p *policy.Policy, _ *Input, _ *backends.Command) { p.Base = policy.Base{Kind: policy.BaseImage} }, "allow-list of host roots"},
		{"uid 0", func(p *policy.Policy, _ *Input, _ *backends.Command) { p.User.UID = 0 }, "uid 0"},
		{"host network", func(p *policy.Policy, _ *Input, _ *backends.Command) { p.Network.Mode = policy.NetworkHost }, `network mode "host"`},
		{"empty command", func(_ *policy.Policy, _ *Input, c *backends.Command) { c.Argv = nil }, "empty command"},
		{"run id", func(_ *policy.Policy, in *Input, _ *backends.Command) { in.RunID = `a"b` }, "run id"},
		{"opt-in", func(_ *policy.Policy, in *Input, _ *backends.Command) { in.OptIns = []string{"everything"} }, `unknown service opt-in "everything"`},
		{"port", func(_ *policy.Policy, in *Input, _ *backends.Command) { in.HostPorts = []int{70000} }, "out of range"},
		{"control character in a mount", func(p *policy.Policy, _ *Input, _ *backends.Command) {
			p.Mounts = append(p.Mounts, policy.Mount{Path: "/Users/me/a\nb", ReadOnly: true, Kind: "dir"})
		}, "control character"},
		{"dot-dot in a writable path", func(p *policy.Policy, _ *Input, _ *backends.Command) {
			p.Mounts = append(p.Mounts, policy.Mount{Path: "/Users/me/work/ws/../x", Kind: "dir"})
		}, `contains ".."`},
		{"NUL in a credential path", func(p *policy.Policy, _ *Input, _ *backends.Command) {
			p.Unreadable = append(p.Unreadable, "/Users/me/.x\x00y")
		}, "control character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, in, cmd := good(), testInput(), backends.Command{Argv: []string{"true"}}
			tc.mutate(p, &in, &cmd)
			if _, err := Render(p, cmd, in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestNetworkRefusesTheInexpressible: what Seatbelt cannot express is an
// error naming why, never a wider rule.
func TestNetworkRefusesTheInexpressible(t *testing.T) {
	tests := []struct {
		intent netIntent
		want   string // "" = expressible, and then the SBPL
		sbpl   string
	}{
		{netIntent{dir: dirOutbound, peer: "localhost"}, "", `(remote ip "localhost:*")`},
		{netIntent{dir: dirOutbound, peer: "localhost", port: 8080}, "", `(remote ip "localhost:8080")`},
		{netIntent{dir: dirOutbound, peer: "*"}, "", `(remote ip "*:*")`},
		{netIntent{dir: dirBind, local: "localhost"}, "", `(local ip "localhost:*")`},
		{netIntent{dir: dirOutbound, peer: "140.82.112.3", port: 443}, "an egress rule to 140.82.112.3 cannot be expressed", ""},
		{netIntent{dir: dirOutbound, peer: "2606:4700::1111"}, "only as * or localhost", ""},
		{netIntent{dir: dirOutbound, peer: "github.com"}, `an egress rule to "github.com" cannot be expressed`, ""},
		{netIntent{dir: dirBind, local: "localhost", peerLoopbackOnly: true}, "cannot be limited to loopback peers", ""},
		{netIntent{dir: dirOutbound, peer: "localhost", viaLocalAddress: true}, "admits every destination", ""},
		{netIntent{dir: dirBind, local: "10.0.0.1"}, "cannot be expressed", ""},
	}
	for _, tc := range tests {
		f, err := tc.intent.sbplFilter()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.intent, err)
		case tc.want == "" && f.sbpl() != tc.sbpl:
			t.Errorf("%+v = %s, want %s", tc.intent, f.sbpl(), tc.sbpl)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one mentioning %q", tc.intent, err, tc.want)
		}
	}
}

func TestRenderArgvAndScratch(t *testing.T) {
	p := handPolicy(profiles.RoleReproducer, "/Users/me", "/Users/me/work/ws", "/Users/me/src/p", policy.NetworkLoopback)
	in := testInput()
	in.ProfilePath = "/private/var/folders/xy/T/ts/run-1/profile-1.sb"
	art, err := Render(p, backends.Command{Argv: []string{"python3", "-c", "print(1)"}}, in)
	if err != nil {
		t.Fatal(err)
	}
	if art.Scratch.Home != "/private/var/folders/xy/T/ts/run-1/home" || art.Scratch.Tmp != "/private/var/folders/xy/T/ts/run-1/tmp" {
		t.Errorf("scratch %+v: want canonical run-dir home and tmp", art.Scratch)
	}
	argv := strings.Join(art.Argv, " ")
	if !strings.HasPrefix(argv, "/usr/bin/sandbox-exec -f "+in.ProfilePath+" -D RUN_DIR=/private/var/folders/xy/T/ts/run-1 ") ||
		!strings.HasSuffix(argv, " -- python3 -c print(1)") {
		t.Errorf("argv %q", argv)
	}
	for k, v := range art.Params {
		if !strings.Contains(argv, "-D "+k+"="+v) {
			t.Errorf("parameter %s is not passed with -D", k)
		}
	}
	js, err := art.JSON()
	if err != nil || !strings.Contains(string(js), `"sandbox_exec": "/usr/bin/sandbox-exec"`) || !strings.Contains(string(js), `"params"`) {
		t.Errorf("JSON %s, %v", js, err)
	}
}

// TestOptIns: an opted-in family leaves the deny list and is allowed,
// with its risk in the profile.
func TestOptIns(t *testing.T) {
	p := handPolicy(profiles.RoleAgent, "/Users/me", "/Users/me/work/ws", "/Users/me/src/p", policy.NetworkLoopback)
	in := testInput()
	in.OptIns = []string{"trustd"}
	v := newProver(t, p, in)
	v.expect(sbplLookup("com.apple.trustd.agent"), true, "trustd opted in")
	v.expect(sbplLookup("com.apple.SecurityServer"), false, "keychain not opted in")
	if !strings.Contains(v.art.Profile, "Opt-in trustd: "+OptIns()["trustd"]) {
		t.Error("the opt-in's risk is not in the profile")
	}
	for _, e := range v.errs {
		t.Error(e)
	}
	if _, err := NewWithOptions(backends.Env{}, Options{OptIns: []string{"nope"}}); err == nil {
		t.Error("an unknown opt-in was accepted")
	}
}

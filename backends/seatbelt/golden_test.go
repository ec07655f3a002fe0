package seatbelt

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenCases are representative policies on a Mac-shaped filesystem:
// symlinked /tmp and /var, a symlinked ~/.ssh, paths with spaces,
// brackets, quotes and unicode.
func goldenCases() []struct {
	name string
	p    *policy.Policy
	in   Input
} {
	home := "/Users/me"
	canon := macFS(map[string]string{home + "/.ssh": "/Volumes/keys/ssh"},
		home+"/work", home+"/Work Space", "/Volumes/keys/ssh", "/private/tmp/checkout (copy)", "/private/var/folders/xy/T")
	in := func(role profiles.Role, opts ...string) Input {
		return Input{Canon: canon, RunID: string(role) + "-1", RunDir: "/var/folders/xy/T/triage-sandbox-seatbelt-501/run-1",
			Self: "/opt/homebrew/bin/triage-sandbox", HostPorts: []int{5432, 6379, 8080}, OptIns: opts}
	}
	agent := handPolicy(profiles.RoleAgent, home, home+"/work/triage", home+"/src/project", policy.NetworkLoopback)
	agent.Mounts = append(agent.Mounts, policy.Mount{Path: home + "/.pyenv/versions/3.12.1", ReadOnly: true, Kind: "dir"})

	oddRoot := home + "/Work Space/[triage] \"q\" ünïcødé"
	odd := handPolicy(profiles.RoleReproducer, home, oddRoot, "/tmp/checkout (copy)", policy.NetworkLoopback)
	odd.Mounts = append(odd.Mounts, policy.Mount{Path: home + "/Library/Caches/ms-playwright", ReadOnly: true, Kind: "dir"})
	odd.Masked = []string{"/tmp/checkout (copy)/.git/fsmonitor--daemon.ipc"}

	netOn := handPolicy(profiles.RoleAgent, home, home+"/work/triage", home+"/src/project", policy.NetworkOutbound)

	// A network allow-list as `render` shows it: the placeholder port.
	allowList := handPolicy(profiles.RoleReproducer, home, home+"/work/triage", home+"/src/project", policy.NetworkProxy)
	allowList.Network.Key = "[sandbox.reproducer] network"
	allowList.Network.HostProxy = &policy.HostProxy{Port: RenderProxyPort}
	return []struct {
		name string
		p    *policy.Policy
		in   Input
	}{
		{"agent-default", agent, in("agent")},
		{"reproducer-odd-paths", odd, in("reproducer")},
		{"agent-network-on-trustd", netOn, in("agent", "trustd")},
		{"reproducer-allow-list", allowList, in("reproducer")},
	}
}

type goldenArgs struct {
	Params map[string]string `json:"params"`
	Argv   []string          `json:"argv"`
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			art, err := Render(tc.p, backends.Command{Argv: []string{"python3", "repro.py"}}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			args, err := json.MarshalIndent(goldenArgs{art.Params, art.Argv}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", tc.name+".sb"), art.Profile)
			compareGolden(t, filepath.Join("testdata", tc.name+".args.json"), string(args)+"\n")
			// A golden profile is only worth keeping if it holds.
			newProver(t, tc.p, tc.in).check()
		})
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./backends/seatbelt -run TestGolden -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the rendering; if the change is intended, run go test ./backends/seatbelt -run TestGolden -update and review the diff\n%s",
			path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first differing line.
func firstDiff(a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return ""
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

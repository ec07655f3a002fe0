package hints

import (
	"errors"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

func testPolicy() *policy.Policy {
	return &policy.Policy{
		Role: "reproducer", WorkspaceRoot: "/ws",
		Mounts: []policy.Mount{
			{Path: "/ws", ReadOnly: true, Why: "workspace root"},
			{Path: "/ws/repros", ReadOnly: false, Why: "writable (repros)"},
			{Path: "/src/widgets", ReadOnly: true, Why: "project checkout"},
		},
		Unreadable: []string{"/home/u/.ssh"},
		Network:    policy.Network{Mode: policy.NetworkLoopback},
	}
}

var host = Host{
	LookPath: func(name string) (string, error) {
		if name == "less" {
			return "/usr/bin/less", nil
		}
		return "", errors.New("not found")
	},
	Exists: func(path string) bool { return path == "/opt/data/x.csv" || path == "/home/u/.ssh/id_rsa" },
}

func TestFrom(t *testing.T) {
	tests := []struct {
		name, output string
		exit         int
		want         []string // substrings, one per hint; nil = no hint
	}{
		{"plain assertion failure", "FAILED test_x.py::test_y - AssertionError: 1 != 2", 1, nil},
		{"success says nothing", "sh: 1: less: not found", 0, nil},
		{"write to the workspace", "OSError: [Errno 30] Read-only file system: '/ws/out/report.txt'", 1,
			[]string{`add "out" to [sandbox] writable`}},
		{"write to the checkout", "touch: cannot touch '/src/widgets/.cache': Read-only file system", 1,
			[]string{"/src/widgets is mounted read-only (project checkout)"}},
		{"write to an output is not the sandbox's doing", "OSError: [Errno 30] Read-only file system: '/ws/repros/x'", 1, nil},
		{"network", "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>", 1,
			[]string{"network = false"}},
		{"tool missing in the image", "sh: 1: less: not found", 1, []string{"less is missing in the sandbox but the host has it (/usr/bin/less)"}},
		{"python's form", "FileNotFoundError: [Errno 2] No such file or directory: 'less'", 1, []string{"less is missing"}},
		{"a tool nobody has", "bash: frobnicate: command not found", 127, nil},
		{"host path not mounted", "PermissionError: [Errno 13] Permission denied: '/opt/data/x.csv'", 1,
			[]string{"/opt/data/x.csv exists on the host but is not visible in the sandbox: mount it read-only with [sandbox] read_only"}},
		{"credential path: no hint to mount it", "cat: /home/u/.ssh/id_rsa: Permission denied", 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := From(testPolicy(), tt.output, tt.exit, host)
			if len(got) != len(tt.want) {
				t.Fatalf("hints %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("hint %q lacks %q", got[i], w)
				}
			}
		})
	}
}

package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestWritableOutOfReach: no writable path may hand the sandbox what
// decides or records its runs, nor a path that must stay unreadable.
func TestWritableOutOfReach(t *testing.T) {
	tests := []struct {
		name, toml string
		home       func(root string) string
		want       string
	}{
		{name: "the config itself", toml: "[sandbox]\nwritable = [\"triage.toml\"]\n", want: "covers the config"},
		{name: "the workspace root", toml: "[sandbox]\nwritable = [\".\"]\n", want: "whole workspace root"},
		{name: "the audit log", toml: "[sandbox]\naudit_log = \"out/audit.jsonl\"\nwritable = [\"out\"]\n", want: "covers the audit log"},
		{name: "a configured secret inside", toml: "[sandbox]\nwritable = [\"out\"]\nsecrets = [\"~/out/key\"]\n",
			home: func(root string) string { return root }, want: "contains the unreadable path"},
		{name: "a default credential path inside", toml: "[sandbox]\nwritable = [\".config\"]\n",
			home: func(root string) string { return root }, want: "contains the unreadable path"},
		{name: "defaults are fine", toml: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := workspace(t, tt.toml)
			host := fakeHost(t)
			if tt.home != nil {
				host.Home = tt.home(cfg.Root)
			}
			for _, role := range profiles.Roles() {
				_, err := Build(cfg, role, host, Options{})
				if tt.want == "" {
					must(t, err)
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("%s: err = %v, want %q", role, err, tt.want)
				}
			}
		})
	}
}

// TestAuditLogOutsideTheWorkspace: by default runs are recorded in the
// caller's state directory, keyed by workspace, where no sandbox writes.
func TestAuditLogOutsideTheWorkspace(t *testing.T) {
	cfg := workspace(t, "")
	p, err := Build(cfg, "agent", fakeHost(t), Options{})
	must(t, err)
	if !strings.HasPrefix(p.AuditLog, "/home/alice/.local/state/triage-sandbox/audit/ws-") {
		t.Errorf("audit log %s", p.AuditLog)
	}
	for _, w := range p.Writable() {
		if within(w, p.AuditLog) {
			t.Errorf("writable %s covers the audit log", w)
		}
	}
	host := fakeHost(t, "XDG_STATE_HOME=/var/state")
	p, err = Build(cfg, "agent", host, Options{})
	must(t, err)
	if filepath.Dir(p.AuditLog) != "/var/state/triage-sandbox/audit" {
		t.Errorf("XDG_STATE_HOME ignored: %s", p.AuditLog)
	}
	if !slices.Contains(p.Unreadable, "/home/alice/.local/state/triage-sandbox") {
		t.Errorf("the orchestrator's state must be unreadable: %v", p.Unreadable)
	}
}

// TestNoConfigCreatesNothing: on the built-in defaults (no triage.toml)
// missing outputs are left alone, existing ones are used, and the policy
// says which root and defaults it uses.
func TestNoConfigCreatesNothing(t *testing.T) {
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "repros"), 0o755))
	p, err := Build(config.Default(root), "agent", fakeHost(t), Options{})
	must(t, err)
	if got := p.Writable(); len(got) != 1 || got[0] != filepath.Join(root, "repros") {
		t.Errorf("writable = %v, want only the existing repros", got)
	}
	if w := p.HostPreparation(); len(w) != 1 || w[0].Path != filepath.Join(root, "repros") {
		t.Errorf("host preparation %+v, want only the existing repros: nothing may be created", w)
	}
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[len(p.Warnings)-1], "no triage.toml found: built-in defaults with "+root) ||
		!strings.Contains(p.Warnings[len(p.Warnings)-1], "NOTES.md") {
		t.Errorf("warnings %q", p.Warnings)
	}
}

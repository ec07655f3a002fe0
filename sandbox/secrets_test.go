package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// TestSecretsRedactScreenedValues: every value the policy screened as a
// credential (by name or by value) is redacted, so is a secret passed on
// purpose by its exact name, and plain values are left alone.
func TestSecretsRedactScreenedValues(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "triage.toml"),
		[]byte("[sandbox]\nenv = [\"TRIAGE_DEPLOY_TOKEN\", \"TRIAGE_COMMIT\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(root, "triage.toml"))
	if err != nil {
		t.Fatal(err)
	}
	redacted := map[string]string{
		"TRIAGE_APITOKEN":     "apitoken-value",
		"TRIAGE_GHPAT":        "ghpat-value-123",
		"TRIAGE_PRIVKEY":      "privkey-value",
		"TRIAGE_DATABASE_URL": "postgres://app:hunter2@db/app",
		"TRIAGE_RUN_ID":       "ghp_R2d9xQ7mPz4LkT8vNw3yB6cJ1hF5sGa0eU2i",
		"TRIAGE_DEPLOY_TOKEN": "passed-on-purpose",
		"TRIAGE_COMMIT":       "3f786850e387550fdab836ed7d6dc881de23001b",
		"GITHUB_TOKEN":        "ghp-not-allowed",
		// Withheld, benign name, secret value: the policy marked it.
		"HOSTNAME": "sk-proj-4fJk2LmN8pQ1rS5tU7vW9xY0zA3bC6dE",
	}
	shown := map[string]string{
		"PATH":         "/usr/local/bin:/usr/bin:/bin",
		"LANG":         "C.UTF-8",
		"TRIAGE_ISSUE": "https://github.com/octo-org/widgets/issues/7",
		"TRIAGE_REPO":  "octo-org/widgets-frontend-service",
		"PWD":          "/home/alice/src/widgets",
		"SHELL":        "/bin/bash",
	}
	host := policy.Host{Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root}
	for k, v := range redacted {
		host.Env = append(host.Env, k+"="+v)
	}
	for k, v := range shown {
		host.Env = append(host.Env, k+"="+v)
	}
	p, err := policy.Build(cfg, "reproducer", host, policy.Options{Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range Secrets(p, host) {
		got[s.Name] = s.Value
	}
	for k, v := range redacted {
		if got[k] != v {
			t.Errorf("%s=%s is not redacted", k, v)
		}
	}
	for k := range shown {
		if _, ok := got[k]; ok {
			t.Errorf("%s would be redacted; it is not a secret", k)
		}
	}
}
